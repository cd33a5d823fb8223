package main

import "net/url"

func parseURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s, err
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String(), nil
}
