import sys

from rmax.cli import main

# Through SystemExit, as the console script does: a stop that landed inside code run by exec()
# (dataclasses build their methods so) leaves CPython 3.11 a flag that turns a normal return from
# here into death by SIGINT, after the command had handled the stop and stored its runs.
sys.exit(main())
