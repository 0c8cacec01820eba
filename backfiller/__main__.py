from backfiller.cli import main

main()
