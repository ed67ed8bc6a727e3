# Campaign-level command line: multirun, the TTY progress line, make deps without root.

$ wb run tests/fixtures/recipes/campaign.lua --multirun cases=1,2 sleep=0 -o $T/multi | sed "s|$T|T|"
[multirun 1/2] cases=1  (T/multi/1_cases=1)
complete T/multi/1_cases=1
[multirun 2/2] cases=2  (T/multi/2_cases=2)
complete T/multi/2_cases=2

$ ls $T/multi; grep -c '"schema_name": "wb.multirun"' $T/multi/multirun.json
1_cases=1
2_cases=2
multirun.json
wb.lock
1

$ wb run tests/fixtures/recipes/campaign.lua --multirun cases=1,x -o $T/multi2
wb: override 'cases=x': type mismatch: cases is an integer (tests/fixtures/recipes/campaign.lua), got string 'x'
[2]

$ script -qec "wb run tests/fixtures/recipes/campaign.lua cases=2 sleep=0 -o $T/tty" /dev/null | tr '\r' '\n' | grep -c '\[[01]/2\] case'
2

$ wb run tests/fixtures/recipes/campaign.lua cases=2 sleep=0 -o $T/pipe 2>&1 | grep -c '\[0/2\]'
0
[1]

# requires: root: it runs tools/deps.sh as nobody (runuser)
$ cp tools/deps.sh $T/deps.sh && chmod 755 $T && chmod 644 $T/deps.sh && WB_EXTRA_PACKAGES=wb-no-such-package runuser -u nobody -- bash $T/deps.sh
wb: missing Debian packages; run as root:
  apt-get install -y --no-install-recommends wb-no-such-package
[1]

# make test's check without root: the missing package is reported, the tests run (exit 0); in CI it fails
# requires: root: it runs tools/deps.sh as nobody (runuser)
$ cp tools/deps.sh $T/deps.sh && chmod 755 $T && chmod 644 $T/deps.sh && WB_EXTRA_PACKAGES=wb-no-such-package runuser -u nobody -- env -u CI bash $T/deps.sh --test; echo "exit $?"; WB_EXTRA_PACKAGES=wb-no-such-package CI=true runuser -u nobody -- env CI=true bash $T/deps.sh --test
wb: missing Debian packages (the tests that need them are skipped); to install them, as root:
  apt-get install -y --no-install-recommends wb-no-such-package
exit 0
wb: missing Debian packages; run as root:
  apt-get install -y --no-install-recommends wb-no-such-package
[1]

# A secret override in a multirun: its values appear in no file and no name; numbered in labels
$ wb run tests/fixtures/recipes/campaign.lua --multirun cases=1 sleep=0 '+db.password=hunter22,swordfish9' -o $T/secret | sed "s|$T|T|"; grep -rl 'hunter22\|swordfish9' $T/secret; ls $T/secret
[multirun 1/2] +db.password=[REDACTED 1]  (T/secret/1_+db.password=_REDACTED_1_)
complete T/secret/1_+db.password=_REDACTED_1_
[multirun 2/2] +db.password=[REDACTED 2]  (T/secret/2_+db.password=_REDACTED_2_)
complete T/secret/2_+db.password=_REDACTED_2_
1_+db.password=_REDACTED_1_
2_+db.password=_REDACTED_2_
multirun.json
wb.lock

# --resume needs a secret's values again (wb does not keep them); a refusal does not show them
$ rm -r $T/secret/2_*; wb run tests/fixtures/recipes/campaign.lua --resume $T/secret 2>&1 | sed "s|$T|T|"
wb: --resume: T/secret ran with overrides of secret keys (db.password), whose values wb does not keep: give the multirun's overrides again

$ wb run tests/fixtures/recipes/campaign.lua --resume $T/secret cases=1 sleep=0 '+db.password=hunter22,swordfish9' | sed "s|$T|T|"
[multirun 2/2] +db.password=[REDACTED 2]  (T/secret/2_+db.password=_REDACTED_2_)
complete T/secret/2_+db.password=_REDACTED_2_

$ wb run tests/fixtures/recipes/campaign.lua --resume $T/secret/1_* cases=2 sleep=0 '+db.password=hunter22' 2>&1 | sed "s|$T|T|"
wb: --resume: T/secret/1_+db.password=_REDACTED_1_ ran with the overrides 'cases=1' 'sleep=0' '+db.password=[REDACTED]', not 'cases=2' 'sleep=0' '+db.password=[REDACTED]' (changed: cases; resume without them, or start a new run)

# --resume of a run whose manifest.json is a FIFO: refused at once, one line, exit 2
$ wb run tests/fixtures/recipes/campaign.lua cases=1 sleep=0 -o $T/fifo > /dev/null && rm $T/fifo/manifest.json && mkfifo $T/fifo/manifest.json && timeout 20 wb run tests/fixtures/recipes/campaign.lua --resume $T/fifo 2>&1 | sed "s|$T|T|"
wb: --resume: T/fifo/manifest.json: not a regular file (wb reads a FIFO, device or socket only as /dev/stdin, /dev/fd/N or /proc/self/fd/N, and follows no link in a run directory)
