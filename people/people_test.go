package people

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
)

func team() *Directory {
	return New([]config.Person{
		{ID: "ci", Kind: KindService, Permissions: []string{"talk", "admin"}},
		{ID: "ann", Name: "Ann", Role: RoleAdmin, Emails: []string{"Ann@Example.com"}, Accounts: map[string]string{"telegram": "@ann"}},
		{ID: "bo", Name: "Bo", Role: RoleMember, Emails: []string{"bo@example.com"}},
		{ID: "cy", Role: RoleOperator},
		{ID: "di"},
	})
}

func TestImplicitOwner(t *testing.T) {
	d := New(nil)
	if !d.Implicit() {
		t.Fatal("Implicit() = false for an empty people list")
	}
	o := d.FirstAdmin()
	if o == nil || o.ID != Owner || !slices.Equal(o.Permissions, event.Permissions) {
		t.Fatalf("FirstAdmin() = %+v, want owner with every permission", o)
	}
	for _, perm := range event.Permissions {
		if err := d.Allow(hub.Actor{Door: "web", Person: Owner, SignedIn: true}, perm); err != nil {
			t.Errorf("owner %s: %v", perm, err)
		}
	}
}

func TestRoles(t *testing.T) {
	d := team()
	tests := []struct {
		id   string
		role string
		can  []string
		not  []string
	}{
		{"di", RoleViewer, []string{"read"}, []string{"talk", "cancel", "approve", "admin"}},
		{"bo", RoleMember, []string{"read", "talk", "cancel", "memory", "schedules"}, []string{"approve", "reset", "forget", "erase", "admin"}},
		{"cy", RoleOperator, []string{"talk", "approve", "reset", "forget", "erase"}, []string{"admin"}},
		{"ann", RoleAdmin, event.Permissions, nil},
		{"ci", "", []string{"talk", "admin"}, []string{"read", "approve"}},
	}
	for _, tc := range tests {
		p := d.Get(tc.id)
		if p == nil || p.Role != tc.role {
			t.Fatalf("Get(%s) = %+v, want role %q", tc.id, p, tc.role)
		}
		for _, perm := range tc.can {
			if !p.Can(perm) {
				t.Errorf("%s cannot %s, want can", tc.id, perm)
			}
		}
		for _, perm := range tc.not {
			if p.Can(perm) {
				t.Errorf("%s can %s, want cannot", tc.id, perm)
			}
		}
	}
	if got := d.FirstAdmin(); got == nil || got.ID != "ann" {
		t.Fatalf("FirstAdmin() = %+v, want ann (a service is never the first admin)", got)
	}
	if d.Name("di") != "di" || d.Name("ann") != "Ann" || d.Name("zed") != "" {
		t.Fatalf("Name: got %q %q %q", d.Name("di"), d.Name("ann"), d.Name("zed"))
	}
}

func TestLookups(t *testing.T) {
	d := team()
	if p := d.ByEmail("ann@EXAMPLE.com"); p == nil || p.ID != "ann" {
		t.Fatalf("ByEmail any case = %+v, want ann", p)
	}
	if p := d.ByEmail("eve@example.com"); p != nil {
		t.Fatalf("ByEmail stranger = %+v, want nil", p)
	}
	if p := d.ByAccount("telegram", "@ann"); p == nil || p.ID != "ann" {
		t.Fatalf("ByAccount = %+v, want ann", p)
	}
	if p := d.ByAccount("matrix", "@ann"); p != nil {
		t.Fatalf("ByAccount on another door = %+v, want nil", p)
	}
}

func TestAllowRefusals(t *testing.T) {
	d := team()
	tests := []struct {
		name string
		a    hub.Actor
		perm string
		want string // the refusal's message, "" for allowed
	}{
		{"member talks", hub.Actor{Door: "email", Person: "bo"}, "talk", ""},
		{"member resets", hub.Actor{Door: "web", Person: "bo", SignedIn: true}, "reset", "bo may not reset the conversation"},
		{"viewer talks", hub.Actor{Door: "web", Person: "di", SignedIn: true}, "talk", "di may not talk to the assistant"},
		{"operator approves signed in", hub.Actor{Door: "web", Person: "cy", SignedIn: true}, "approve", ""},
		{"operator approves by email", hub.Actor{Door: "email", Person: "cy"}, "approve",
			"cy may answer approval requests only when signed in (the web page, a token, the terminal); the email door only says who sent a message"},
		{"admin erases by chat", hub.Actor{Door: "telegram", Person: "ann"}, "erase",
			"ann may erase messages only when signed in (the web page, a token, the terminal); the telegram door only says who sent a message"},
		{"nobody", hub.Actor{Door: "email"}, "reset", "the email door names nobody, and only a signed-in person may reset the conversation"},
		{"unknown", hub.Actor{Door: "web", Person: "zed", SignedIn: true}, "read", "zed is not in people and may not read the conversation"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := d.Allow(tc.a, tc.perm)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Allow = %v, want nil", err)
				}
				return
			}
			var fe *hub.ForbiddenError
			if !errors.As(err, &fe) || fe.Message != tc.want || fe.Permission != tc.perm || fe.Code() != "forbidden" {
				t.Fatalf("Allow = %#v, want a ForbiddenError %q for %s", err, tc.want, tc.perm)
			}
		})
	}
}

func TestWhoInContext(t *testing.T) {
	d := team()
	if _, ok := FromContext(context.Background()); ok {
		t.Fatal("FromContext of a bare context: ok, want none")
	}
	ctx := NewContext(context.Background(), Who{Person: d.Get("bo"), Credential: "abc", Via: "token"})
	w, ok := FromContext(ctx)
	if !ok || w.Person.ID != "bo" {
		t.Fatalf("FromContext = %+v %v", w, ok)
	}
	if a := w.Actor("web"); a != (hub.Actor{Door: "web", Person: "bo", SignedIn: true}) {
		t.Fatalf("Actor = %+v", a)
	}
	if a := (Who{}).Actor("web"); a != (hub.Actor{Door: "web"}) {
		t.Fatalf("Actor of nobody = %+v", a)
	}
	you := d.Get("bo").You()
	if you.Person != "bo" || you.Name != "Bo" || you.Role != RoleMember || len(you.Permissions) != 5 {
		t.Fatalf("You() = %+v", you)
	}
}
