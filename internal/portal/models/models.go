// Package models holds the JSON shapes of the portal's API: what handlers bind requests
// into and write responses from. openapi/openapi.yaml describes the same shapes (the
// served document, openapi/zz_generated.openapi.json, adds the kinds'); the tests keep
// them in step.
package models

import "time"

// RegisterRequest is the body of POST /api/v1/users.
type RegisterRequest struct {
	Username string `json:"username"`
	Email    string `json:"email"`
	Password string `json:"password"`
}

// LoginRequest is the body of POST /api/v1/login.
type LoginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// RefreshRequest is the body of POST /api/v1/token/refresh.
type RefreshRequest struct {
	RefreshToken string `json:"refresh_token"`
}

// TokenResponse answers a login or a refresh.
type TokenResponse struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	TokenType    string `json:"token_type"`
	// ExpiresIn is the access token's lifetime in seconds.
	ExpiresIn int64 `json:"expires_in"`
}

// User is a portal account as the API shows it: never with a password or its hash.
type User struct {
	ID         string    `json:"id"`
	Username   string    `json:"username"`
	Email      string    `json:"email"`
	Role       string    `json:"role"`
	Namespaces []string  `json:"namespaces"`
	CreatedAt  time.Time `json:"createdAt"`
	// Locked is true while some client is locked out of the account by failed logins.
	Locked bool `json:"locked,omitempty"`
	// Teams are the teams the user is in; only GET /api/v1/users/me tells them.
	Teams []TeamMembership `json:"teams,omitempty"`
}

// UserList answers GET /api/v1/users: one page of users, sorted by username.
type UserList struct {
	// Metadata says where the next page starts, as a Kubernetes list's does.
	Metadata ListMeta `json:"metadata"`
	Items    []User   `json:"items"`
}

// ListMeta is the paging part of a Kubernetes list's metadata: Continue, when not
// empty, fetches the next page; RemainingItemCount, when the API server knows it, is
// how many items follow this page.
type ListMeta struct {
	Continue           string `json:"continue,omitempty"`
	RemainingItemCount *int64 `json:"remainingItemCount,omitempty"`
}

// UpdateMeRequest is the body of PATCH /api/v1/users/me. A new password needs the
// current one.
type UpdateMeRequest struct {
	Email           *string `json:"email,omitempty"`
	Password        *string `json:"password,omitempty"`
	CurrentPassword *string `json:"currentPassword,omitempty"`
}

// UpdateUserRequest is the body of PATCH /api/v1/users/{id} (admins only).
type UpdateUserRequest struct {
	Role       *string   `json:"role,omitempty"`
	Namespaces *[]string `json:"namespaces,omitempty"`
}

// NamespaceList answers GET /api/v1/namespaces: the namespaces the caller may use.
type NamespaceList struct {
	Items []string `json:"items"`
}

// Message is a plain answer such as {"message":"pong"}.
type Message struct {
	Message string `json:"message"`
}

// ErrorResponse is every error the portal returns.
type ErrorResponse struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody says what went wrong: a stable code (the Kubernetes reason for errors the
// API server returned), a sentence, and one entry per invalid field.
type ErrorBody struct {
	Code    string       `json:"code"`
	Message string       `json:"message"`
	Fields  []FieldError `json:"fields"`
}

// FieldError names one invalid input field and why.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}
