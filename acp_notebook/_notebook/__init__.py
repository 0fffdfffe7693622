"""The notebook layer: one ``Notebook`` per kernel that owns its agents, cells, pacing and
background turns; the faces (magics, panel) call it.
"""
