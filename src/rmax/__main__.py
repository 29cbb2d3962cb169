from rmax.cli import main

main()
