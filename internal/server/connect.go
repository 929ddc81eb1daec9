package server

import (
	"context"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/mrtr-wasm/mrtr-wasm/internal/crm"
	"github.com/mrtr-wasm/mrtr-wasm/internal/identity"
)

// The /connect/{id} page takes an outside calendar's API key for the
// principal who started connect_calendar. The anti-phishing rule (verify
// who opens the URL; make sure it is the user who started the request; do
// not let an edited URL change that): the id in the URL is an opaque
// 256-bit random value that names nobody, and the principal is bound to it
// server-side. How the page knows who the visitor is depends on the mode:
//
//   - OAuth (--oauth-issuer with --oauth-client-id): the visitor signs in
//     at the issuer (authorization code + PKCE, identity.Login), and the
//     key is taken only when the signed-in principal is the link's.
//   - --auth-tokens (try-outs): the link itself is the capability:
//     unguessable, bound to its principal, short-lived and good for one
//     key. The page names the account it connects so that a person sent
//     someone else's link can tell; it never asks for a bearer token
//     (RATIONALE.md says what this does not protect against).
//   - no authentication: everyone is "anonymous" and the page says so.
//
// Editing the URL gives another session (bound to its own principal) or
// none.

var connectPage = template.Must(template.New("connect").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Connect your calendar · mrtr-wasm demo CRM</title>
<style>
body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1d2430}
h1{font-size:1.4rem} label{display:block;margin:1rem 0 .3rem;font-weight:600}
input{width:100%;padding:.5rem;font-size:1rem;box-sizing:border-box}
button{margin-top:1.2rem;padding:.6rem 1.2rem;font-size:1rem}
.note{color:#555;font-size:.9rem} .error{color:#a00;font-weight:600} .ok{color:#060;font-weight:600}
</style></head><body>
<h1>Connect your calendar</h1>
{{if .Done}}<p class="ok" id="result">{{.Done}}</p>
{{else}}{{if .Error}}<p class="error" id="result">{{.Error}}</p>{{end}}
{{if .Form}}<p>Your assistant asked to connect an outside calendar to the demo CRM.
The API key you enter here goes to this server only; your assistant never sees it.</p>
<form method="post" autocomplete="off">
{{if .Account}}<p class="note" id="account">This connects the calendar of the account <strong>{{.Account}}</strong>.{{if .Capability}} Continue only if that is you and you asked your assistant to connect a calendar just now: if someone sent you this link, close this page.{{end}}</p>
{{else}}<p class="note">This server runs without authentication: everyone is “anonymous”.</p>{{end}}
<label for="api_key">Calendar API key</label>
<input id="api_key" name="api_key" type="password" required maxlength="512" autocomplete="off">
<button type="submit" id="submit">Connect</button>
</form>{{end}}{{end}}
</body></html>
`))

type pageData struct {
	Form bool
	// Account is the principal the link connects (shown under
	// --auth-tokens and OAuth); Capability says the link alone proves it.
	Account    string
	Capability bool
	Error      string
	Done       string
}

func (s *Server) connectHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		connectHeaders(h)
		id := strings.TrimPrefix(r.URL.Path, "/connect/")
		if id == "" || strings.Contains(id, "/") || len(id) > 64 {
			s.page(w, http.StatusNotFound, pageData{Error: "This link is not valid."})
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			s.connectGET(w, r, id)
		case http.MethodPost:
			if s.crossOrigin.Check(r) != nil {
				s.connectLog(r.Context(), "cross_origin", "")
				s.page(w, http.StatusForbidden, pageData{Error: "This form can only be sent from its own page, not from another site. Nothing was stored. If someone sent you a page that led here, do not use it."})
				return
			}
			s.connectPOST(w, r, id)
		default:
			h.Set("Allow", "GET, POST")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	})
}

// connectOrigins checks that a POST to the page comes from the page: by
// the browser's Sec-Fetch-Site, else its Origin against the Host or the
// public URL's origin (a reverse proxy may rewrite the Host). Under
// --auth-tokens the link is the capability, and another site that holds
// a link could otherwise submit a key to it from the victim's browser.
// A POST with neither header is not a browser's, and passes.
func connectOrigins(publicURL string) *http.CrossOriginProtection {
	p := http.NewCrossOriginProtection()
	if u, err := url.Parse(publicURL); err == nil && u.Scheme != "" && u.Host != "" {
		_ = p.AddTrustedOrigin(u.Scheme + "://" + u.Host)
	}
	return p
}

func connectHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
}

// visitor says who the page's visitor is for the link bound to owner: the
// principal to store the key for, and what to show. ok false means the
// response was written (a redirect to sign in, or a refusal).
func (s *Server) visitor(w http.ResponseWriter, r *http.Request, id, owner string) (principal string, d pageData, ok bool) {
	a := s.cfg.Auth
	switch {
	case a == nil:
		return identity.Anonymous, pageData{Form: true}, true
	case a.Tokens() != nil:
		return owner, pageData{Form: true, Account: owner, Capability: true}, true
	case a.Login() == nil:
		s.connectLog(r.Context(), "no_sign_in", "")
		s.page(w, http.StatusServiceUnavailable, pageData{Error: "This server cannot sign you in (it has no --oauth-client-id), so it cannot take the key."})
		return "", pageData{}, false
	}
	who := a.Login().SignedIn(r)
	if who == nil {
		if r.Method != http.MethodGet {
			s.page(w, http.StatusUnauthorized, pageData{Error: "Your sign-in expired. Open the link again. Nothing was stored."})
			return "", pageData{}, false
		}
		a.Login().Start(w, r, "/connect/"+id)
		return "", pageData{}, false
	}
	if who.Principal != owner {
		s.connectLog(r.Context(), "wrong_principal", who.Principal)
		s.page(w, http.StatusForbidden, pageData{Error: "This link was started by another account, so nothing will be stored. If someone sent you this link, do not use it."})
		return "", pageData{}, false
	}
	return who.Principal, pageData{Form: true, Account: who.Principal}, true
}

// connectCallback is where the issuer sends the browser back after
// signing in.
func (s *Server) connectCallback(w http.ResponseWriter, r *http.Request) {
	connectHeaders(w.Header())
	to, err := s.cfg.Auth.Login().Finish(w, r)
	if err != nil {
		s.connectLog(r.Context(), "sign_in_failed", "")
		s.page(w, http.StatusBadRequest, pageData{Error: "The sign-in could not be completed. Open the link from your assistant again."})
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

func (s *Server) page(w http.ResponseWriter, status int, d pageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = connectPage.Execute(w, d)
}

const linkGone = "This link is not valid any more. Ask your assistant to connect the calendar again."

func (s *Server) connectGET(w http.ResponseWriter, r *http.Request, id string) {
	cs, err := s.cfg.CRM.Connect(r.Context(), id)
	switch {
	case errors.Is(err, crm.ErrNotFound):
		s.page(w, http.StatusNotFound, pageData{Error: linkGone})
	case err != nil:
		s.page(w, http.StatusServiceUnavailable, pageData{Error: "The server could not read this link. Try again shortly."})
	case cs.Completed:
		s.page(w, http.StatusGone, pageData{Error: "This link was already used. If your calendar is connected, go back to your assistant and continue."})
	case time.Now().After(cs.ExpiresAt):
		s.page(w, http.StatusGone, pageData{Error: linkGone})
	default:
		if _, d, ok := s.visitor(w, r, id, cs.Principal); ok {
			s.page(w, http.StatusOK, d)
		}
	}
}

func (s *Server) connectPOST(w http.ResponseWriter, r *http.Request, id string) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.page(w, http.StatusBadRequest, pageData{Error: "The form could not be read."})
		return
	}
	// Who is this? Verify before accepting anything.
	cs, err := s.cfg.CRM.Connect(r.Context(), id)
	if err != nil {
		s.connectLog(r.Context(), "gone", "")
		s.page(w, http.StatusGone, pageData{Error: linkGone})
		return
	}
	principal, form, ok := s.visitor(w, r, id, cs.Principal)
	if !ok {
		return
	}
	key := strings.TrimSpace(r.PostForm.Get("api_key"))
	if key == "" || len(key) > 512 || strings.IndexFunc(key, func(c rune) bool { return !unicode.IsPrint(c) }) >= 0 {
		form.Error = "Enter the calendar's API key (printable characters, at most 512)."
		s.page(w, http.StatusBadRequest, form)
		return
	}
	err = s.cfg.CRM.CompleteConnect(r.Context(), id, principal, key)
	switch {
	case err == nil:
		s.connectLog(r.Context(), "connected", principal)
		if l := s.cfg.Auth.Login(); l != nil {
			l.SignOut(w, r)
		}
		s.page(w, http.StatusOK, pageData{Done: "Your calendar is connected. Go back to your assistant and continue."})
	case errors.Is(err, crm.ErrPrincipal):
		// Someone else's link: the phishing case. Say so, store nothing.
		s.connectLog(r.Context(), "wrong_principal", principal)
		s.page(w, http.StatusForbidden, pageData{Error: "This link was started by another account, so nothing was stored. If someone sent you this link, do not use it."})
	case errors.Is(err, crm.ErrNotFound), errors.Is(err, crm.ErrExpired):
		s.connectLog(r.Context(), "gone", principal)
		s.page(w, http.StatusGone, pageData{Error: linkGone})
	case errors.Is(err, crm.ErrUsed):
		s.connectLog(r.Context(), "used", principal)
		s.page(w, http.StatusGone, pageData{Error: "This link was already used. Nothing more was stored."})
	default:
		s.connectLog(r.Context(), "error", principal)
		form.Error = "The server could not store the key. Nothing was stored; try again shortly."
		s.page(w, http.StatusServiceUnavailable, form)
	}
}

// connectLog notes what happened on the page: never the key, the token
// or the link's id.
func (s *Server) connectLog(ctx context.Context, outcome, principal string) {
	s.metrics.Outcomes.WithLabelValues("connect_page", outcome).Inc()
	attrs := []slog.Attr{slog.String("page", "connect"), slog.String("outcome", outcome)}
	if principal != "" {
		attrs = append(attrs, slog.String("principal", principal))
	}
	level := slog.LevelInfo
	if outcome != "connected" {
		level = slog.LevelWarn
	}
	s.log.LogAttrs(ctx, level, "connect page", attrs...)
}
