package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/services"
)

// Codes of the errors the portal makes itself; errors of the API server keep the
// Kubernetes reason (Forbidden, Invalid, NotFound, AlreadyExists, Conflict, ...).
const (
	CodeBadRequest       = "BadRequest"
	CodeValidation       = "ValidationFailed"
	CodeUnauthorized     = "Unauthorized"
	CodeForbidden        = "Forbidden"
	CodeNotFound         = "NotFound"
	CodeConflict         = "Conflict"
	CodeTooLarge         = "RequestEntityTooLarge"
	CodeUnsupportedType  = "UnsupportedMediaType"
	CodeTooManyRequests  = "TooManyRequests"
	CodeInternal         = "InternalError"
	CodeUnavailable      = "ServiceUnavailable"
	CodeMethodNotAllowed = "MethodNotAllowed"
)

// WriteError answers with the JSON error for err.
func WriteError(c *gin.Context, err error) {
	status, body := errorBody(c.Request.Context(), err)
	c.AbortWithStatusJSON(status, models.ErrorResponse{Error: body})
}

func fail(status int, code, message string, fields ...models.FieldError) (int, models.ErrorBody) {
	if fields == nil {
		fields = []models.FieldError{}
	}
	return status, models.ErrorBody{Code: code, Message: message, Fields: fields}
}

func errorBody(ctx context.Context, err error) (int, models.ErrorBody) {
	var se *services.Error
	if errors.As(err, &se) {
		switch se.Kind {
		case services.KindInvalid:
			return fail(http.StatusUnprocessableEntity, CodeValidation, se.Message, se.Fields...)
		case services.KindUnauthorized:
			return fail(http.StatusUnauthorized, CodeUnauthorized, se.Message, se.Fields...)
		case services.KindForbidden:
			return fail(http.StatusForbidden, CodeForbidden, se.Message, se.Fields...)
		case services.KindNotFound:
			return fail(http.StatusNotFound, CodeNotFound, se.Message, se.Fields...)
		case services.KindConflict:
			return fail(http.StatusConflict, CodeConflict, se.Message, se.Fields...)
		case services.KindBadRequest:
			return fail(http.StatusBadRequest, CodeBadRequest, se.Message, se.Fields...)
		}
	}
	var re *requestError
	if errors.As(err, &re) {
		return fail(re.status, re.code, re.message, re.fields...)
	}
	// The API server's answer passes through: its status, reason, message and causes.
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		code := string(s.Reason)
		if code == "" {
			code = http.StatusText(int(s.Code))
		}
		status := int(s.Code)
		if status < 400 || status > 599 {
			status = http.StatusInternalServerError
		}
		return fail(status, code, services.StatusMessage(s), services.FieldErrors(s)...)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fail(http.StatusGatewayTimeout, "Timeout", "the cluster did not answer in time")
	}
	slog.ErrorContext(ctx, "Request failed", "err", err)
	return fail(http.StatusInternalServerError, CodeInternal, "internal error; the portal's log has the details under this request id")
}

// requestError is a problem with the request itself (body too large, bad JSON).
type requestError struct {
	status        int
	code, message string
	fields        []models.FieldError
}

func (e *requestError) Error() string { return e.message }

// TooLarge answers 413.
func TooLarge(c *gin.Context) {
	WriteError(c, errTooLarge)
}

var errTooLarge = &requestError{status: http.StatusRequestEntityTooLarge, code: CodeTooLarge, message: "the request body is larger than 1 MiB"}

// TooManyRequests answers 429; the rate limit middleware has set Retry-After.
func TooManyRequests(c *gin.Context) {
	WriteError(c, &requestError{status: http.StatusTooManyRequests, code: CodeTooManyRequests,
		message: "rate limit exceeded; retry after the number of seconds in Retry-After"})
}

// NotFound answers 404 for paths no route serves.
func NotFound(c *gin.Context) {
	WriteError(c, &requestError{status: http.StatusNotFound, code: CodeNotFound, message: "no such path: " + c.Request.URL.Path})
}

// MethodNotAllowed answers 405.
func MethodNotAllowed(c *gin.Context) {
	WriteError(c, &requestError{status: http.StatusMethodNotAllowed, code: CodeMethodNotAllowed, message: c.Request.Method + " is not allowed on " + c.Request.URL.Path})
}

// UnsupportedMediaType answers 415 to a body that is not JSON.
func UnsupportedMediaType(c *gin.Context, got string) {
	if got == "" {
		got = "none"
	}
	WriteError(c, &requestError{status: http.StatusUnsupportedMediaType, code: CodeUnsupportedType,
		message: "the request body must be JSON (Content-Type: application/json), got Content-Type " + got})
}

// BadPathParam answers 400 to a path whose namespace or name is no valid DNS name.
func BadPathParam(c *gin.Context, param, value string, problems []string) {
	what := map[string]string{"ns": "namespace", "name": "name"}[param]
	msg := fmt.Sprintf("%q is not a valid %s: %s", value, what, strings.Join(problems, "; "))
	WriteError(c, &requestError{status: http.StatusBadRequest, code: CodeBadRequest, message: param + ": " + msg,
		fields: []models.FieldError{{Field: param, Message: msg}}})
}
