"""The ``kinetic`` command of a platform wheel: it runs the binary the wheel carries."""

import os
import sys


def main():
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "kinetic")
    if not os.access(exe, os.X_OK):
        sys.stderr.write("kinetic: this installation carries no kinetic binary (%s): install the "
                         "platform wheel (`make wheel`), or put bin/kinetic on PATH\n" % exe)
        return 1
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
