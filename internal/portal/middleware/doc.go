// Package middleware holds the gin middleware of the portal: request ids, access logs,
// metrics, trace span names, body limits, authentication and rate limits.
package middleware
