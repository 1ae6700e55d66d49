#!/bin/sh
# Starts a child that holds stdout open, says its pid, waits until the test
# writes a line to the FIFO $GATE, then exits and leaves the child behind.
sleep 1000 &
echo "child $!"
read line < "$GATE"
exit 0
