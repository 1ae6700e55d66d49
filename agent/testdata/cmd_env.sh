#!/bin/sh
# Prints the environment variables the tests care about.
printf 'FOO=%s SECRET=%s HOME=%s PATHSET=%s' "$FOO" "${FRONTDESK_TEST_SECRET-unset}" "$HOME" "${PATH:+yes}"
