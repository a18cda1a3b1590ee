"""Development-only signing keys (Ed25519).

Public on purpose: they let a fresh clone run with one command. Settings refuse
them when ``environment == "production"``.
"""

DEV_PRIVATE_KEY = """-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIKYUgHim2wEfHGaZaM2dGDimFDi18PxiiqSX/XwEm8de
-----END PRIVATE KEY-----
"""

DEV_PUBLIC_KEY = """-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEAJrOqHL9ARvtysyojFNyaJWqLcqDY/HZ/RLHzDPPIBCY=
-----END PUBLIC KEY-----
"""
