"""The services one hermes process holds, shared by the core and plugins.

Import from the module that holds each: :mod:`hermes_runtime.threads` (reused worker threads),
:mod:`hermes_runtime.secrets` (the secret registry and redaction), :mod:`hermes_runtime.home`
(the default home folder). Nothing is imported here, so that each costs only when used.
"""
