#!/usr/bin/env python3
"""usage: exits.py <code> <stderr file> <command...>: runs the command with its stderr in the file
and succeeds only if it exits with exactly <code> (lit's `not` accepts any failure)."""
import subprocess
import sys

with open(sys.argv[2], "w") as err:
    rc = subprocess.call(sys.argv[3:], stdout=subprocess.DEVNULL, stderr=err)
sys.exit(0 if rc == int(sys.argv[1]) else "exit status %d, expected %s" % (rc, sys.argv[1]))
