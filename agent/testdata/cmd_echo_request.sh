#!/bin/sh
# Echoes the JSON request it gets on stdin (command backend tests).
cat
