"""The runtime's tests import their local servers (runtime_http_servers) from this folder."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
