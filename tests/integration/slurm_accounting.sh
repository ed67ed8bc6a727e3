#!/usr/bin/env bash
# The Slurm integration suite with accounting (slurmdbd + MariaDB on 127.0.0.1, private datadir):
# final states come from sacct. See tests/integration/slurm.sh.
exec bash "$(dirname "$0")/slurm.sh" --accounting
