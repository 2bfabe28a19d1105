import sys

from solbench.front.cli import main

sys.exit(main())
