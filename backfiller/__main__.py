from backfiller.collector import starting

starting()  # before the command's imports (collector.py)

from backfiller.cli import main  # noqa: E402

main()
