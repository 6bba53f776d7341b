"""Benchmark data on this machine: where it is looked for (`roots`), where each benchmark's
files sit under a root (`layout`), warehouse credentials (`credentials`), verified downloads
(`download`), the official archives (`releases`), `data fetch` (`fetch`) and `data status`
(`status`)."""
