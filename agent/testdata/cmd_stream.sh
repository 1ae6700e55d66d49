#!/bin/sh
# Writes part of its answer without a newline, then waits until the test
# writes a line to the FIFO $GATE, then finishes. The second part splits a
# UTF-8 character (U+2615, e2 98 95) across the two writes.
printf 'part one, \342\230'
read line < "$GATE"
printf '\225 part two'
