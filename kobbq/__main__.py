from kobbq.cli import run

run()
