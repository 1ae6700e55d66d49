#!/bin/sh
# Starts a child that would outlive it, says the child's pid, and waits.
sleep 1000 &
echo "child $!"
wait
