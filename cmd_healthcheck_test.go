package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestHealthcheck(t *testing.T) {
	// The real server, and stand-ins for the answers it gives in trouble.
	real := runServer(t, "-data", t.TempDir())
	unhealthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"status":"shutting down"}`, http.StatusServiceUnavailable)
	}))
	defer unhealthy.Close()
	tokenOnly := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"status":"ok"}`))
	}))
	defer tokenOnly.Close()
	hang := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	defer hanging.Close()
	defer close(hang)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there now

	host := func(u string) string { p, _ := url.Parse(u); return p.Host }
	port := func(u string) string { _, p, _ := net.SplitHostPort(host(u)); return p }
	tests := []struct {
		name    string
		args    []string
		token   string
		wantErr string // "" for exit 0
	}{
		{"healthy", []string{"-addr", host(real.url)}, "", ""},
		{"healthy on a wildcard address", []string{"-addr", "0.0.0.0:" + port(real.url)}, "", ""},
		{"503", []string{"-addr", host(unhealthy.URL)}, "", "503"},
		{"token sent", []string{"-addr", host(tokenOnly.URL)}, "s3cret", ""},
		{"token missing", []string{"-addr", host(tokenOnly.URL)}, "", "401"},
		{"nothing listening", []string{"-addr", closed}, "", "connection refused"},
		{"no answer in time", []string{"-addr", host(hanging.URL), "-timeout", "200ms"}, "", "did not answer within 200ms"},
		{"bad flag", []string{"-nope"}, "", "flag provided but not defined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			getenv := func(k string) string {
				if k == "FRONTDESK_AUTH_TOKEN" {
					return tc.token
				}
				return ""
			}
			err := run(t.Context(), append([]string{"frontdesk", "healthcheck"}, tc.args...), getenv,
				strings.NewReader(""), &stdout, &stderr)
			if tc.wantErr == "" {
				if err != nil || !strings.Contains(stdout.String(), "ok") {
					t.Fatalf("err %v, stdout %q; want ok", err, stdout.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want it to mention %q", err, tc.wantErr)
			}
		})
	}
}
