// Package ui tests the portal's web UI in headless Chromium, driven from Go with
// chromedp, against the portal running beside the operator on a local cluster: people
// register, log in, create and scale Apps, and are granted roles through the pages, and
// the API server's RBAC decides what each one sees.
package ui
