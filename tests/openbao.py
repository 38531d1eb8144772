"""The real OpenBao dev server the tests run against (shared with ``lethe bench``)."""

from lethe.api.bench.openbao import OpenBaoDevServer, find_bao_binary, free_port_pair

__all__ = ["OpenBaoDevServer", "find_bao_binary", "free_port_pair"]
