// Package pgconf reads the PostgreSQL settings the CRM and the ledger
// share: a pgx connection URL, parsed without ever repeating it (it may
// hold a password), and named for logs without the password.
package pgconf

import (
	"errors"
	"net"
	"net/url"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// ErrParse is the error for a setting that does not parse. pgx's own
// parse errors quote the URL, its password redacted as best it can: say
// nothing of it instead.
var ErrParse = errors.New("the PostgreSQL URL does not parse (not shown: it may hold a password)")

// Where names the database for logs: user, host, port, database and
// search_path, never the password or other query settings. Two settings
// with the same Where reach the same tables.
func Where(cfg *pgx.ConnConfig) string {
	host := cfg.Host
	if cfg.Port != 0 {
		host = net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	}
	u := url.URL{Scheme: "postgres", User: url.User(cfg.User), Host: host, Path: "/" + cfg.Database}
	if sp := cfg.RuntimeParams["search_path"]; sp != "" {
		u.RawQuery = url.Values{"search_path": {sp}}.Encode()
	}
	return u.String()
}
