package acl

// Users: names, passwords, types and statuses, and the changes of
// AUTH_UPDATE_USER. No check's error ever holds a password.

import (
	"fmt"
	"strings"

	"github.com/wheelmq/wheelmq/storage/adminbody"
)

// Invalid is a request (or a file record) that breaks a rule; its text is
// the remark of the INVALID_PARAMETER (29) answer.
type Invalid string

func (e Invalid) Error() string { return string(e) }

// Refused is a request RocketMQ refuses with NO_PERMISSION (16) and this
// remark (its AuthenticationException and AuthorizationException): the
// user exists already, the user or subject does not exist, the ACL does not
// exist.
type Refused string

func (e Refused) Error() string { return string(e) }

func invalidf(format string, args ...any) Invalid { return Invalid(fmt.Sprintf(format, args...)) }

// User types and statuses, as RocketMQ names them (UserType, UserStatus).
const (
	TypeSuper     = "Super"
	TypeNormal    = "Normal"
	StatusEnable  = "enable"
	StatusDisable = "disable"
)

// Limits of names, passwords and ACLs.
const (
	MaxUsernameLen = 64
	MinPasswordLen = 8
	MaxPasswordLen = 128
	// MaxEntries bounds one subject's entries, all policies together.
	MaxEntries = 1024
	// MaxSourceIPs bounds one entry's source addresses.
	MaxSourceIPs = 256
	// MaxUsers bounds the users of a broker.
	MaxUsers = 10000
)

// User is one ACL 2.0 user: the user name is the AccessKey its clients
// sign with, the password the SecretKey.
type User struct {
	Name     string
	Password string
	Type     string // TypeSuper or TypeNormal
	Status   string // StatusEnable or StatusDisable
}

// Info is the user as AUTH_GET_USER and AUTH_LIST_USER answer it: without
// the password, always.
func (u User) Info() adminbody.UserInfo {
	return adminbody.UserInfo{Username: u.Name, UserType: u.Type, UserStatus: u.Status}
}

// ValidateUsername checks a user name: 1 to MaxUsernameLen characters,
// letters, digits and _ - . @ only (no ':' or ',', which subjects and
// mqadmin's lists use as separators).
func ValidateUsername(name string) error {
	if strings.TrimSpace(name) == "" {
		return Invalid("The username is blank")
	}
	if len(name) > MaxUsernameLen {
		return invalidf("The username is longer than %d characters", MaxUsernameLen)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == '-' || c == '.' || c == '@') {
			return invalidf("The username %q has a character other than letters, digits and _ - . @", name)
		}
	}
	return nil
}

// ValidatePassword checks a password without ever naming it: MinPasswordLen
// to MaxPasswordLen printable ASCII characters, no spaces.
func ValidatePassword(pw string) error {
	switch {
	case pw == "":
		return Invalid("The password is blank")
	case len(pw) < MinPasswordLen:
		return invalidf("The password is shorter than %d characters", MinPasswordLen)
	case len(pw) > MaxPasswordLen:
		return invalidf("The password is longer than %d characters", MaxPasswordLen)
	}
	for i := 0; i < len(pw); i++ {
		if pw[i] < 0x21 || pw[i] > 0x7e {
			return Invalid("The password may hold printable ASCII characters only, no spaces or control characters")
		}
	}
	return nil
}

// parseUserType reads a userType (case-insensitive); "" stays "".
func parseUserType(s string) (string, error) {
	switch {
	case s == "":
		return "", nil
	case strings.EqualFold(s, TypeSuper):
		return TypeSuper, nil
	case strings.EqualFold(s, TypeNormal):
		return TypeNormal, nil
	}
	return "", invalidf("The userType %q is unknown: Super or Normal", s)
}

// parseUserStatus reads a userStatus (case-insensitive); "" stays "".
func parseUserStatus(s string) (string, error) {
	switch {
	case s == "":
		return "", nil
	case strings.EqualFold(s, StatusEnable):
		return StatusEnable, nil
	case strings.EqualFold(s, StatusDisable):
		return StatusDisable, nil
	}
	return "", invalidf("The userStatus %q is unknown: enable or disable", s)
}

// NewUser is the user AUTH_CREATE_USER creates: name from the header (as
// RocketMQ takes it), the rest from the body; type Normal and status
// enable unless given.
func NewUser(name string, info adminbody.UserInfo) (User, error) {
	if err := ValidateUsername(name); err != nil {
		return User{}, err
	}
	if err := ValidatePassword(info.Password); err != nil {
		return User{}, err
	}
	typ, err := parseUserType(info.UserType)
	if err != nil {
		return User{}, err
	}
	status, err := parseUserStatus(info.UserStatus)
	if err != nil {
		return User{}, err
	}
	u := User{Name: name, Password: info.Password, Type: typ, Status: status}
	if u.Type == "" {
		u.Type = TypeNormal
	}
	if u.Status == "" {
		u.Status = StatusEnable
	}
	return u, nil
}

// Change is what AUTH_UPDATE_USER changes; empty fields stay as they are
// (RocketMQ's updateUser: a blank password is no change).
type Change struct {
	Name     string
	Password string
	Type     string
	Status   string
}

// NewChange checks an AUTH_UPDATE_USER request.
func NewChange(name string, info adminbody.UserInfo) (Change, error) {
	if err := ValidateUsername(name); err != nil {
		return Change{}, err
	}
	c := Change{Name: name}
	if info.Password != "" {
		if err := ValidatePassword(info.Password); err != nil {
			return Change{}, err
		}
		c.Password = info.Password
	}
	var err error
	if c.Type, err = parseUserType(info.UserType); err != nil {
		return Change{}, err
	}
	if c.Status, err = parseUserStatus(info.UserStatus); err != nil {
		return Change{}, err
	}
	if c.Password == "" && c.Type == "" && c.Status == "" {
		return Change{}, Invalid("Nothing to update: give a password, a userType or a userStatus")
	}
	return c, nil
}

// apply returns u with the change made.
func (c Change) apply(u User) User {
	if c.Password != "" {
		u.Password = c.Password
	}
	if c.Type != "" {
		u.Type = c.Type
	}
	if c.Status != "" {
		u.Status = c.Status
	}
	return u
}
