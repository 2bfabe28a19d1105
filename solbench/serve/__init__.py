"""`solbench serve`: one node evaluating candidates for many clients, over HTTP (REST, a web page) and MCP.

    queue.py      the jobs and the device leases, in SQLite under the state folder (nothing lost on restart)
    job.py        one job's process: `solbench run` itself, asking for the device before each scenario
    scheduler.py  starts job processes fairly by client, leases each device to one scenario of one job at a time
    requests.py   what a client may ask for (a job's run options, check's clauses), the limits, the tokens
    service.py    what a client may do (submit, status, result, cancel, check, triage, ...), checked and limited
    app.py        the REST API and the web page (FastAPI on uvicorn), MCP beside it at /mcp
    mcp_server.py the MCP tools (the official `mcp` SDK), over stdio or HTTP

The server is the supervisor: each job is a `solbench run` process of its own (so the candidate runs in the
same confined workers as on the command line), and nothing but that process and this server writes the
state folder. Needs the `serve` extra (`pip install "solbench[serve]"`); imported only by its commands.
"""
