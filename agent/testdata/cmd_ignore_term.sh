#!/bin/sh
# Like cmd_hang.sh, but it and its child ignore SIGTERM: only SIGKILL works.
trap '' TERM
sleep 1000 &
echo "child $!"
wait
