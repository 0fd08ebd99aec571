"""askdesk's agent package. Importing it installs the log-privacy guard (agent/log_privacy.py)
first, so no entry point, test or benchmark can log message text through a third-party client."""

from agent.log_privacy import install as _install_log_privacy

_install_log_privacy()
