package hydra

import (
	"html/template"
	"net/http"
	"net/url"
)

// loginForm is the provider's login page: a username, no password (this provider
// stands in for a real one; who may sign in is the test's to say).
var loginForm = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Test provider · Sign in</title></head>
<body><h1>Test provider</h1>
<form method="post" action="/login">
<input type="hidden" name="challenge" value="{{.}}">
<label for="username">Username</label> <input id="username" name="username" autocomplete="username" required>
<button type="submit" id="sign-in">Sign in</button>
</form></body></html>`))

func (h *Hydra) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", h.loginPage)
	mux.HandleFunc("POST /login", h.login)
	mux.HandleFunc("GET /consent", h.consent)
	return mux
}

func (h *Hydra) loginPage(w http.ResponseWriter, r *http.Request) {
	challenge := r.URL.Query().Get("login_challenge")
	// Only a challenge Hydra knows gets a form.
	if err := h.admin(http.MethodGet, "/admin/oauth2/auth/requests/login?login_challenge="+url.QueryEscape(challenge), nil, nil); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = loginForm.Execute(w, challenge)
}

// login accepts the login of the username typed, with its subject; the consent step
// reads the username back from the login's context.
func (h *Hydra) login(w http.ResponseWriter, r *http.Request) {
	username := r.PostFormValue("username")
	var out struct {
		RedirectTo string `json:"redirect_to"`
	}
	err := h.admin(http.MethodPut, "/admin/oauth2/auth/requests/login/accept?login_challenge="+url.QueryEscape(r.PostFormValue("challenge")),
		map[string]any{"subject": h.user(username).Subject, "remember": false, "context": map[string]string{"username": username}}, &out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	http.Redirect(w, r, out.RedirectTo, http.StatusFound)
}

// consent grants every scope asked for and puts the user's claims in the ID token.
func (h *Hydra) consent(w http.ResponseWriter, r *http.Request) {
	challenge := url.QueryEscape(r.URL.Query().Get("consent_challenge"))
	var req struct {
		Scopes    []string          `json:"requested_scope"`
		Audiences []string          `json:"requested_access_token_audience"`
		Context   map[string]string `json:"context"`
	}
	if err := h.admin(http.MethodGet, "/admin/oauth2/auth/requests/consent?consent_challenge="+challenge, nil, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	username := req.Context["username"]
	u := h.user(username)
	claims := map[string]any{"preferred_username": username, "email": u.Email}
	if u.Groups != nil {
		claims["groups"] = u.Groups
	}
	var out struct {
		RedirectTo string `json:"redirect_to"`
	}
	err := h.admin(http.MethodPut, "/admin/oauth2/auth/requests/consent/accept?consent_challenge="+challenge,
		map[string]any{"grant_scope": req.Scopes, "grant_access_token_audience": req.Audiences, "remember": false,
			"session": map[string]any{"id_token": claims}}, &out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	http.Redirect(w, r, out.RedirectTo, http.StatusFound)
}
