"""Entry points of the remat-lint command: the launcher, arguments, output selection and exit codes."""
