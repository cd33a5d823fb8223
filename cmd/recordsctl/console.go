package main

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/server"
)

const consoleLinkUsage = "console-link --member M [--expires-in 15m] [--url BASE]"

// consoleLinkHelp explains the command beyond its usage line.
const consoleLinkHelp = `Prints a one-time sign-in link to the web console (/console) for a member: the first admin of a new
workspace signs in this way, and so does any member an operator lets in. The link works once, before it
expires (15 minutes by default, at most 24 hours), for an active member; its token is in the URL's
fragment (#sign-in=…), which browsers never send to a server or in a Referer. Only its SHA-256 is
stored. The session it starts lasts 12 hours at most and ends after 30 idle minutes.

--url is the server's address as the member's browser reaches it (default: RECORDS_PUBLIC_URL, else
http://127.0.0.1:8080).`

func cmdConsoleLink(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	member := fs.String("member", "", "the member who signs in")
	expires := fs.String("expires-in", "15m", "how long the link works, at most 24h (e.g. 15m, 2h)")
	base := fs.String("url", "", "the server's address as the browser reaches it (default: RECORDS_PUBLIC_URL, else http://127.0.0.1:8080)")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, consoleLinkUsage), required("member", *member)); err != nil {
			return err
		}
		ttl, err := time.ParseDuration(*expires)
		if err != nil || ttl <= 0 {
			return fmt.Errorf("--expires-in %q: want a duration like 15m or 2h", *expires)
		}
		root := *base
		if root == "" {
			root = os.Getenv("RECORDS_PUBLIC_URL")
		}
		if root == "" {
			root = "http://127.0.0.1:8080"
		}
		u, err := url.Parse(root)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--url %q: want the server's address, such as https://records.example.com", root)
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			token, at, err := b.Directory.CreateSignInLink(e.ctx, *member, ttl)
			if err != nil {
				return err
			}
			link := strings.TrimSuffix(u.String(), "/") + "/console#sign-in=" + token
			return e.emit(map[string]any{"url": link, "expires_at": at.Format(time.RFC3339)},
				fmt.Sprintf("%s\n(works once, until %s)", link, at.Format(time.RFC3339)))
		})
	}
}
