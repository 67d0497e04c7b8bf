"""What noxfile.py's sessions are made of, one concern per module: ``common`` (the repository's
packages, pins and sources), ``wheels`` and ``sources`` (binary wheels and sdists), ``wheels_test``,
``gpu`` and ``hip``. The noxfile puts tools/ on sys.path to import it."""
