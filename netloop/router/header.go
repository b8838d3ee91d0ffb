package router

import (
	"fmt"
	"strconv"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// fieldParser reads a request's header fields and collects every missing
// or malformed one, so that one refusal names them all.
type fieldParser struct {
	cmd *remoting.Command
	// get looks a field up; nil means cmd.Field.
	get  func(string) string
	errs []string
}

func (p *fieldParser) field(k string) string {
	if p.get != nil {
		return p.get(k)
	}
	return p.cmd.Field(k)
}

// str reads a required text field.
func (p *fieldParser) str(k string) string {
	v := p.field(k)
	if v == "" {
		p.errs = append(p.errs, "the custom field <"+k+"> is null")
	}
	return v
}

// int reads a 64-bit integer field; def is returned when it is absent.
func (p *fieldParser) int(k string, required bool, def int64) int64 {
	return p.intBits(k, required, def, 64)
}

// intBits reads an integer field that must fit in bits bits.
func (p *fieldParser) intBits(k string, required bool, def int64, bits int) int64 {
	v := p.field(k)
	if v == "" {
		if required {
			p.errs = append(p.errs, "the custom field <"+k+"> is null")
		}
		return def
	}
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		p.errs = append(p.errs, fmt.Sprintf("the custom field <%s> is not a number: %q", k, v))
	}
	return n
}

// refusal is INVALID_PARAMETER naming every bad field, or nil.
func (p *fieldParser) refusal() *Refusal {
	if len(p.errs) == 0 {
		return nil
	}
	return refuse(remoting.InvalidParameter, "%v", p.errs)
}
