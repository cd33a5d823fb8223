// Package webhooks holds the delivery primitives of the event feed's webhooks, as the Standard Webhooks
// specification (https://www.standardwebhooks.com, version 1.0.0) defines them: signing secrets and
// signatures ([NewSecret], [Sign], [Headers], [Verify]), a URL check and an HTTP client that refuse
// private and reserved addresses ([ValidateURL], [NewClient]), one delivery attempt ([Deliver]) and the
// retry schedule ([NextAttempt]).
//
// The package is a runtime leaf: it imports the standard library only, keeps no state between calls and
// never logs. The outbox, the endpoints table and the delivery worker that call it live elsewhere.
//
// A delivery, as the worker runs it:
//
//	client := webhooks.NewClient(webhooks.Options{Timeout: 15 * time.Second})
//	for n := 1; ; n++ {
//		a := webhooks.Deliver(ctx, client, endpoint.URL, endpoint.Secret, msg.ID, time.Now(), msg.Body)
//		if a.Outcome == webhooks.OutcomeDelivered {
//			break
//		}
//		wait, ok := webhooks.NextAttempt(n, nil)
//		if !ok {
//			break // exhausted: mark the message failed, tell the endpoint's owner
//		}
//		// store a and schedule attempt n+1 after max(wait, a.RetryAfter)
//	}
//
// # Signatures
//
// A secret is "whsec_" followed by the standard base64 encoding of 24 to 64 random bytes ([NewSecret]
// makes 32). The signed content is "msg_id.timestamp.body", the timestamp in unix seconds; the signature
// is "v1," followed by the base64 HMAC-SHA256 of that content under the decoded secret. The
// webhook-signature header is a space-separated list of such signatures: while a secret is rotated the
// sender signs with both the old and the new one, and [Verify] accepts a message when any signature
// matches any of the secrets it is given.
//
// # Addresses
//
// Endpoint URLs come from users, so a delivery must not reach the server's own network (SSRF). The check
// is made where it cannot be dodged: on the IP address the dialer is about to connect to, after DNS
// resolution, for every connection ([NewClient]); a name that resolves to a public address when the URL
// is saved and to 127.0.0.1 when it is called (DNS rebinding) is refused at the second dial. [ValidateURL]
// refuses malformed URLs and literal IP addresses in a refused range up front, when an endpoint is saved.
package webhooks
