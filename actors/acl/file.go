package acl

// The two files (docs/formats.md, "ACL 2.0 users and policies"):
//
//	<data>/acl/users.json  {"format":1,"users":[{"username":..,"password":..,"userType":..,"userStatus":..}]}
//	<data>/acl/acls.json   {"format":1,"acls":[{"subject":"User:..","policies":[{"policyType":..,"entries":[..]}]}]}
//
// Both are indented JSON, records sorted by name, written whole through
// vfs.WriteFileAtomic with mode 0600 in a 0700 directory: users.json holds
// the passwords themselves, because RocketMQ's signature (HMAC-SHA1 keyed
// with the secret) can only be checked with the secret. There is no .bak:
// an older file could bring back a deleted user or a changed password, so
// a damaged file stops the broker's start with an error naming it.
//
// FORMAT: "format" is 1. A reader refuses any other number; a change of
// layout bumps it, and the reader of N reads N-1 too.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/adminbody"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

// fileFormat is the "format" of both files.
const fileFormat = 1

// The file names inside the ACL directory.
const (
	UsersFile = "users.json"
	ACLsFile  = "acls.json"
)

// fileMode and dirMode keep the passwords to the broker's own user.
const (
	fileMode fs.FileMode = 0o600
	dirMode  fs.FileMode = 0o700
)

type fileUser struct {
	Username   string `json:"username"`
	Password   string `json:"password"`
	UserType   string `json:"userType"`
	UserStatus string `json:"userStatus"`
}

type usersFile struct {
	Format int        `json:"format"`
	Users  []fileUser `json:"users"`
}

type fileEntry struct {
	Resource  string   `json:"resource"`
	Actions   []string `json:"actions"`
	SourceIps []string `json:"sourceIps,omitempty"`
	Decision  string   `json:"decision"`
}

type filePolicy struct {
	PolicyType string      `json:"policyType"`
	Entries    []fileEntry `json:"entries"`
}

type fileACL struct {
	Subject  string       `json:"subject"`
	Policies []filePolicy `json:"policies"`
}

type aclsFile struct {
	Format int       `json:"format"`
	ACLs   []fileACL `json:"acls"`
}

// Load reads the ACL directory's two files (missing files: no users, no
// ACLs) and returns their snapshot. A damaged file, or a record that
// breaks a rule, is an error naming the file. An ACL whose user is missing
// is left out with a warning; a file others may read is warned about.
func Load(fsys vfs.FS, dir string, log zerolog.Logger) (*Snapshot, error) {
	users, acls, err := load(vfs.Default(fsys), dir, log)
	if err != nil {
		return nil, err
	}
	return newSnapshot(users, acls), nil
}

func load(fsys vfs.FS, dir string, log zerolog.Logger) (map[string]User, map[string]ACL, error) {
	upath, apath := filepath.Join(dir, UsersFile), filepath.Join(dir, ACLsFile)
	users := map[string]User{}
	var uf usersFile
	if ok, err := readFile(fsys, upath, &uf, log); err != nil {
		return nil, nil, err
	} else if ok {
		for i, fu := range uf.Users {
			u, err := NewUser(fu.Username, adminbody.UserInfo{Password: fu.Password, UserType: fu.UserType, UserStatus: fu.UserStatus})
			if err != nil {
				return nil, nil, fmt.Errorf("acl users file %s: user %d: %w", upath, i+1, err)
			}
			if _, dup := users[u.Name]; dup {
				return nil, nil, fmt.Errorf("acl users file %s: user %q twice", upath, u.Name)
			}
			users[u.Name] = u
		}
	}
	acls := map[string]ACL{}
	var af aclsFile
	if ok, err := readFile(fsys, apath, &af, log); err != nil {
		return nil, nil, err
	} else if ok {
		for i, fa := range af.ACLs {
			a, err := fa.parse()
			if err != nil {
				return nil, nil, fmt.Errorf("acl file %s: acl %d: %w", apath, i+1, err)
			}
			if _, dup := acls[a.User]; dup {
				return nil, nil, fmt.Errorf("acl file %s: subject %q twice", apath, fa.Subject)
			}
			if _, ok := users[a.User]; !ok {
				log.Warn().Str("path", apath).Str("subject", fa.Subject).
					Msg("ACL of a user that does not exist ignored (it is dropped at the next change)")
				continue
			}
			acls[a.User] = a
		}
	}
	return users, acls, nil
}

// readFile decodes one file into v; a missing file is (false, nil).
func readFile(fsys vfs.FS, path string, v any, log zerolog.Logger) (bool, error) {
	data, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("acl file %s: %w", path, err)
	}
	if fi, err := fsys.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		log.Warn().Str("path", path).Str("mode", fi.Mode().Perm().String()).
			Msg("ACL file readable by others: it holds passwords, chmod 600 it")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return false, fmt.Errorf("acl file %s is damaged: %w", path, err)
	}
	if dec.More() {
		return false, fmt.Errorf("acl file %s is damaged: data after the JSON object", path)
	}
	var format int
	switch f := v.(type) {
	case *usersFile:
		format = f.Format
	case *aclsFile:
		format = f.Format
	}
	if format != fileFormat {
		return false, fmt.Errorf("acl file %s: format %d, this wheelmq reads format %d", path, format, fileFormat)
	}
	return true, nil
}

// parse checks a file's ACL: as a request's, and every policy names its
// type and holds entries (what the broker writes).
func (fa fileACL) parse() (ACL, error) {
	if len(fa.Policies) == 0 {
		return ACL{}, Invalid("no policies")
	}
	for j, p := range fa.Policies {
		if p.PolicyType == "" || len(p.Entries) == 0 {
			return ACL{}, invalidf("policy %d has no policyType or no entries", j+1)
		}
	}
	return ParseACL("", fa.info())
}

func (fa fileACL) info() adminbody.AclInfo {
	out := adminbody.AclInfo{Subject: fa.Subject}
	for _, p := range fa.Policies {
		pi := adminbody.PolicyInfo{PolicyType: p.PolicyType}
		for _, e := range p.Entries {
			pi.Entries = append(pi.Entries, adminbody.PolicyEntryInfo{Resource: e.Resource, Actions: e.Actions,
				SourceIps: e.SourceIps, Decision: e.Decision})
		}
		out.Policies = append(out.Policies, pi)
	}
	return out
}

// saveUsers writes users.json.
func saveUsers(fsys vfs.FS, dir string, users map[string]User) error {
	f := usersFile{Format: fileFormat, Users: []fileUser{}}
	for _, u := range users {
		f.Users = append(f.Users, fileUser{Username: u.Name, Password: u.Password, UserType: u.Type, UserStatus: u.Status})
	}
	slices.SortFunc(f.Users, func(a, b fileUser) int { return strings.Compare(a.Username, b.Username) })
	return writeFile(fsys, filepath.Join(dir, UsersFile), f)
}

// saveACLs writes acls.json.
func saveACLs(fsys vfs.FS, dir string, acls map[string]ACL) error {
	f := aclsFile{Format: fileFormat, ACLs: []fileACL{}}
	for _, a := range acls {
		info := a.Info()
		fa := fileACL{Subject: info.Subject}
		for _, p := range info.Policies {
			fp := filePolicy{PolicyType: p.PolicyType}
			for _, e := range p.Entries {
				fp.Entries = append(fp.Entries, fileEntry{Resource: e.Resource, Actions: e.Actions, SourceIps: e.SourceIps,
					Decision: e.Decision})
			}
			fa.Policies = append(fa.Policies, fp)
		}
		f.ACLs = append(f.ACLs, fa)
	}
	slices.SortFunc(f.ACLs, func(a, b fileACL) int { return strings.Compare(a.Subject, b.Subject) })
	return writeFile(fsys, filepath.Join(dir, ACLsFile), f)
}

func writeFile(fsys vfs.FS, path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := vfs.MkdirAllSynced(fsys, filepath.Dir(path), dirMode); err != nil {
		return err
	}
	return vfs.WriteFileAtomic(fsys, path, append(data, '\n'), fileMode)
}
