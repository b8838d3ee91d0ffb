package router

import "fmt"

// Refusal is the answer to a request that is not served: the RocketMQ
// response code and the remark the client shows. Nothing was stored or
// changed.
type Refusal struct {
	Code   int32
	Remark string
}

// refuse builds a Refusal with a formatted remark.
func refuse(code int32, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Remark: fmt.Sprintf(format, args...)}
}

// Error makes a Refusal usable as an error in tests and logs.
func (f *Refusal) Error() string { return fmt.Sprintf("code %d: %s", f.Code, f.Remark) }
