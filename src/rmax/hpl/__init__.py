"""HPL: input files, output parsing, and the engines that run it (rmax-hpl, hpcc, xhpl)."""
