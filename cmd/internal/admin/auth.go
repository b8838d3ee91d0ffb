package admin

// RocketMQ 5.3's ACL 2.0 admin requests (AUTH_* 3001-3010), as
// MQClientAPIImpl sends them: the user name or subject in the header,
// UserInfo or AclInfo JSON in the body (storage/adminbody).

import (
	"context"
	"fmt"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

func init() {
	for code, name := range map[int32]string{
		remoting.AuthCreateUser: "AUTH_CREATE_USER", remoting.AuthUpdateUser: "AUTH_UPDATE_USER",
		remoting.AuthDeleteUser: "AUTH_DELETE_USER", remoting.AuthGetUser: "AUTH_GET_USER",
		remoting.AuthListUser: "AUTH_LIST_USER", remoting.AuthCreateACL: "AUTH_CREATE_ACL",
		remoting.AuthUpdateACL: "AUTH_UPDATE_ACL", remoting.AuthDeleteACL: "AUTH_DELETE_ACL",
		remoting.AuthGetACL: "AUTH_GET_ACL", remoting.AuthListACL: "AUTH_LIST_ACL",
	} {
		requestNames[code] = name
	}
}

// authBody encodes a request body.
func authBody(v any) ([]byte, error) {
	b, err := adminbody.EncodeAuth(v)
	if err != nil {
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	return b, nil
}

// CreateUser creates a user on a broker (AUTH_CREATE_USER).
func (s *Session) CreateUser(ctx context.Context, broker string, u adminbody.UserInfo) error {
	body, err := authBody(u)
	if err != nil {
		return err
	}
	_, err = s.Call(ctx, broker, remoting.NewRequest(remoting.AuthCreateUser, map[string]string{"username": u.Username}, body))
	return err
}

// UpdateUser changes a user's password, type or status (AUTH_UPDATE_USER);
// empty fields are left as they are.
func (s *Session) UpdateUser(ctx context.Context, broker string, u adminbody.UserInfo) error {
	body, err := authBody(u)
	if err != nil {
		return err
	}
	_, err = s.Call(ctx, broker, remoting.NewRequest(remoting.AuthUpdateUser, map[string]string{"username": u.Username}, body))
	return err
}

// DeleteUser deletes a user and its ACL (AUTH_DELETE_USER).
func (s *Session) DeleteUser(ctx context.Context, broker, name string) error {
	_, err := s.Call(ctx, broker, remoting.NewRequest(remoting.AuthDeleteUser, map[string]string{"username": name}, nil))
	return err
}

// GetUser reads one user (AUTH_GET_USER); nil when the broker has none.
// Whatever password a broker sends back is dropped.
func (s *Session) GetUser(ctx context.Context, broker, name string) (*adminbody.UserInfo, error) {
	resp, err := s.Call(ctx, broker, remoting.NewRequest(remoting.AuthGetUser, map[string]string{"username": name}, nil))
	if err != nil {
		return nil, err
	}
	if len(resp.Body) == 0 {
		return nil, nil
	}
	u, err := adminbody.DecodeUserInfo(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("AUTH_GET_USER answer of %s: %w", broker, err)
	}
	u.Password = ""
	return &u, nil
}

// ListUsers lists the users whose name contains filter ("" all)
// (AUTH_LIST_USER), without passwords.
func (s *Session) ListUsers(ctx context.Context, broker, filter string) ([]adminbody.UserInfo, error) {
	fields := map[string]string{}
	if filter != "" {
		fields["filter"] = filter
	}
	resp, err := s.Call(ctx, broker, remoting.NewRequest(remoting.AuthListUser, fields, nil))
	if err != nil {
		return nil, err
	}
	us, err := adminbody.DecodeUserInfos(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("AUTH_LIST_USER answer of %s: %w", broker, err)
	}
	for i := range us {
		us[i].Password = ""
	}
	return us, nil
}

// CreateACL adds policies to a subject's ACL (AUTH_CREATE_ACL; RocketMQ
// merges into an ACL that exists).
func (s *Session) CreateACL(ctx context.Context, broker string, a adminbody.AclInfo) error {
	return s.putACL(ctx, broker, remoting.AuthCreateACL, a)
}

// UpdateACL is CreateACL as AUTH_UPDATE_ACL (mqadmin updateAcl).
func (s *Session) UpdateACL(ctx context.Context, broker string, a adminbody.AclInfo) error {
	return s.putACL(ctx, broker, remoting.AuthUpdateACL, a)
}

func (s *Session) putACL(ctx context.Context, broker string, code int32, a adminbody.AclInfo) error {
	body, err := authBody(a)
	if err != nil {
		return err
	}
	_, err = s.Call(ctx, broker, remoting.NewRequest(code, map[string]string{"subject": a.Subject}, body))
	return err
}

// DeleteACL deletes a subject's ACL, or with a resource only that entry of
// the policy type ("" Custom) (AUTH_DELETE_ACL).
func (s *Session) DeleteACL(ctx context.Context, broker, subject, policyType, resource string) error {
	fields := map[string]string{"subject": subject}
	if policyType != "" {
		fields["policyType"] = policyType
	}
	if resource != "" {
		fields["resource"] = resource
	}
	_, err := s.Call(ctx, broker, remoting.NewRequest(remoting.AuthDeleteACL, fields, nil))
	return err
}

// GetACL reads a subject's ACL (AUTH_GET_ACL); nil when it has none.
func (s *Session) GetACL(ctx context.Context, broker, subject string) (*adminbody.AclInfo, error) {
	resp, err := s.Call(ctx, broker, remoting.NewRequest(remoting.AuthGetACL, map[string]string{"subject": subject}, nil))
	if err != nil {
		return nil, err
	}
	if len(resp.Body) == 0 {
		return nil, nil
	}
	a, err := adminbody.DecodeAclInfo(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("AUTH_GET_ACL answer of %s: %w", broker, err)
	}
	return &a, nil
}

// ListACLs lists the ACLs whose subject contains subjectFilter, with the
// entries whose resource contains resourceFilter (AUTH_LIST_ACL).
func (s *Session) ListACLs(ctx context.Context, broker, subjectFilter, resourceFilter string) ([]adminbody.AclInfo, error) {
	fields := map[string]string{}
	if subjectFilter != "" {
		fields["subjectFilter"] = subjectFilter
	}
	if resourceFilter != "" {
		fields["resourceFilter"] = resourceFilter
	}
	resp, err := s.Call(ctx, broker, remoting.NewRequest(remoting.AuthListACL, fields, nil))
	if err != nil {
		return nil, err
	}
	as, err := adminbody.DecodeAclInfos(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("AUTH_LIST_ACL answer of %s: %w", broker, err)
	}
	return as, nil
}
