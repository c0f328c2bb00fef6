// Package auth holds the portal's credentials machinery: Argon2id password hashes and
// signed JWT access and refresh tokens whose signing keys live in a Secret shared by
// every replica.
package auth
