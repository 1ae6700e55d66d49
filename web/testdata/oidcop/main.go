// Command oidcop runs the zitadel example OpenID provider
// (github.com/zitadel/oidc/v3/example/server) on 127.0.0.1 with a port
// the kernel picks, the frontdesk test users below, and two clients whose
// redirect URI is the test server's callback: "frontdesk" (confidential,
// secret "s3cret", client_secret_basic) and "frontdesk-public" (a public
// client, PKCE only). It prints "issuer <URL>" on stdout once it listens
// and serves until stdin closes (the test ends) or it is killed.
//
// web's OIDC tests build it in a module of its own (see oidcop_test.go):
// it is not part of frontdesk's module.
package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"golang.org/x/text/language"
)

// users are the provider's accounts. Password is always "pw".
var users = map[string]*storage.User{
	// Ann: people[] lists ann@example.com; matched by email, then bound.
	"sub-ann": {ID: "sub-ann", Username: "ann", Email: "ann@example.com", EmailVerified: true},
	// Mallory claims Bo's address without having verified it.
	"sub-mallory": {ID: "sub-mallory", Username: "mallory", Email: "bo@example.com", EmailVerified: false},
	// Zed is vouched for by the provider but listed in no people entry.
	"sub-zed": {ID: "sub-zed", Username: "zed", Email: "zed@elsewhere.example", EmailVerified: true},
	// Svc has the address of a kind: service person.
	"sub-svc": {ID: "sub-svc", Username: "svc", Email: "ci@example.com", EmailVerified: true},
}

type userStore struct{}

func (userStore) GetUserByID(id string) *storage.User { return users[id] }
func (userStore) GetUserByUsername(name string) *storage.User {
	for _, u := range users {
		if u.Username == name {
			return u
		}
	}
	return nil
}
func (userStore) ExampleClientID() string { return storage.ServiceUserID }

func main() {
	redirect := flag.String("redirect", "", "the relying party's callback URL")
	flag.Parse()
	for _, u := range users {
		u.Password, u.FirstName, u.LastName, u.PreferredLanguage = "pw", u.Username, "Test", language.English
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	issuer := "http://" + ln.Addr().String()
	storage.RegisterClients(
		storage.WebClient("frontdesk", "s3cret", *redirect),
		storage.NativeClient("frontdesk-public", *redirect),
	)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	router := exampleop.SetupServer(issuer, storage.NewStorage(userStore{}), logger, false)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	fmt.Println("issuer", issuer)
	if err := http.Serve(ln, router); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
