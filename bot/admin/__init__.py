"""The local admin channel of `askdesk serve`: how `askdesk ingest` reaches a running bot.

The embedded store admits one process, so while the bot runs it owns the data directory. It
listens on a Unix socket, `<data_dir>/admin.sock` or, for a data dir whose path is too long for
a socket, one in a private runtime directory (bot/admin/location.py; mode 0600, peer uid
checked), and runs ingest jobs that a CLI process hands it; the CLI shows the same progress and
output as a local run. See docs/scaling.md.
"""

SOCKET_NAME = "admin.sock"
