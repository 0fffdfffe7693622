"""The policy: rules that answer permission requests, and the shell reader that decides what a
command line does (a command it cannot read is never approved by a rule).
"""
