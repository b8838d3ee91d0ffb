// Package console is the broker's web console: server-rendered pages
// (html/template, files embedded with embed.FS) served by the process on
// its HTTP port at "/", beside /metrics and /healthz.
//
// Pages: overview, stages (the pipeline drawn as docs/architecture.md's
// diagram, with the numbers on it), topics (paged, searchable; create and
// delete), groups (consumers, lag per queue; reset offsets to a time),
// messages (by id, key or queue offset: properties, body as text, JSON or
// hex, and the message's life), timers (pending timers over the next
// minute, hour, day, month and year from the timer wheel's own slot
// counts; lateness; the largest delays; cancel), clients (producers and
// consumers of every protocol, each online group's lag with its POP
// deliveries in flight apart), dead letters (the %DLQ% topics, their
// messages, resend to the retry or the original topic) and cluster; the
// topic page sends a test message.
//
// Charts are SVG drawn by the server: no JavaScript library, no CDN. A
// page's live part (the element marked data-live) is fetched again every
// two seconds by console.js with ?partial=1 while the tab is visible; no
// one looking costs nothing.
//
// Everything comes from a Backend (backend.go), which the process
// implements by asking its stages; the console has no store.
//
// # Safety
//
//   - With access control on (Backend.ACL), every page needs a login with
//     an access key and secret (checked by Backend.Authenticate, compared
//     in constant time there); the session id is a 128-bit random value in
//     an HttpOnly, SameSite=Strict cookie, and the session expires
//     (Options.SessionTTL, 8 h by default; sliding). The secret stays in the server's memory:
//     the console signs its admin requests with it, so the broker's ACL
//     decides each one with that account's rights. Changes need an admin
//     account; reads need SUB or admin.
//   - No GET changes anything. Every change is a POST carrying the
//     session's CSRF token (a hidden form field), refused with 403
//     without it; a cross-origin Origin header is refused too.
//   - Every change is logged (zerolog, "console change") with who made it,
//     from where, and what.
//   - Only the Host values it serves under are answered (origin.go:
//     Options.Listen's port with an IP literal or localhost, and
//     Options.Hosts), against DNS rebinding; any other gets 421.
//   - Logins are limited per client address and per account with a
//     doubling lock (limit.go; 429 with Retry-After); the redirect after a
//     login goes only to a path of this origin (safeNext); an account
//     holds at most maxAccountSessions sessions and never pushes out
//     another's.
//   - Options.HTTPSLogin (the port also speaks HTTPS): the login page is
//     served, and a login taken, over HTTPS only.
package console
