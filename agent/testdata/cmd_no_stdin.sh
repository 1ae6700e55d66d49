#!/bin/sh
# Never reads its stdin.
echo ok
