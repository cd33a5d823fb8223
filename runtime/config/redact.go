package config

import (
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
)

// Redacted is what logs show in place of a secret.
const Redacted = "[redacted]"

// LogValue renders the settings of the bound program (every setting when none is bound) as a group
// keyed by setting name, in table order, secrets redacted: a server logs its effective configuration
// with log.Info("configuration", "config", cfg).
func (c Config) LogValue() slog.Value {
	var attrs []slog.Attr
	for _, s := range Settings() {
		if !c.src.inScope(s) {
			continue
		}
		switch v := s.get(&c).(type) {
		case bool:
			attrs = append(attrs, slog.Bool(s.Name, v))
		default:
			attrs = append(attrs, slog.String(s.Name, s.show(v)))
		}
	}
	return slog.GroupValue(attrs...)
}

// Redacted returns the settings as LogValue does, on one line: "addr=127.0.0.1:8080 db=… …".
func (c Config) Redacted() string {
	var b strings.Builder
	for _, s := range Settings() {
		if !c.src.inScope(s) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		v := s.show(s.get(&c))
		if v == "" || strings.ContainsAny(v, " \t\n\"=") {
			v = strconv.Quote(v)
		}
		b.WriteString(s.Name + "=" + v)
	}
	return b.String()
}

// String returns Redacted, so that fmt never prints a secret of c.
func (c Config) String() string { return c.Redacted() }

// GoString returns Redacted too, for %#v.
func (c Config) GoString() string { return "config.Config{" + c.Redacted() + "}" }

// Format makes every fmt verb print Redacted (%#v: GoString); %d or %x of the struct would otherwise
// print its fields, secrets included.
func (c Config) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, c.GoString())
		return
	}
	fmt.Fprint(f, c.Redacted())
}

// RedactURL returns a database or Redis URL fit for logs: the password of its user info and the
// values of parameters named like a password, secret or token become "[redacted]"; scheme, user,
// host, port, path (the database) and other parameters stay. Text that does not parse as a URL cleanly
// is replaced by its scheme and "[redacted]", since a malformed URL may have its password anywhere.
func RedactURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" {
		return Redacted
	}
	if u.Fragment != "" || strings.Contains(u.Host, "@") || strings.Contains(u.Path, "@") || strings.Contains(u.Opaque, "@") {
		// A password with an unescaped '#', '/' or '@' cut the URL somewhere unexpected.
		return u.Scheme + ":" + Redacted
	}
	var b strings.Builder
	b.WriteString(u.Scheme + ":")
	switch {
	case u.Opaque != "":
		b.WriteString(u.Opaque) // sqlite:./data/records.db
	case !strings.HasPrefix(s[len(u.Scheme)+1:], "//"):
		b.WriteString(u.EscapedPath()) // sqlite:/var/lib/records.db
	default:
		b.WriteString("//")
		if u.User != nil {
			b.WriteString(url.User(u.User.Username()).String())
			if _, has := u.User.Password(); has {
				b.WriteString(":" + Redacted)
			}
			b.WriteByte('@')
		}
		b.WriteString(u.Host)
		b.WriteString(u.EscapedPath())
	}
	if u.RawQuery != "" {
		params := strings.Split(u.RawQuery, "&")
		for i, p := range params {
			name, _, _ := strings.Cut(p, "=")
			if n, err := url.QueryUnescape(name); err != nil || secretParam(n) {
				params[i] = name + "=" + Redacted
			}
		}
		b.WriteString("?" + strings.Join(params, "&"))
	}
	return b.String()
}

// secretParam reports whether a URL parameter's value is a secret: password, sslpassword,
// client_secret, auth_token…
func secretParam(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"pass", "secret", "token"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}
