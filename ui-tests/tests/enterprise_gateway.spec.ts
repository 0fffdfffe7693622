/**
 * JupyterLab whose kernels run behind an Enterprise Gateway 3.3.0 on 127.0.0.1, from a venv of
 * its own (tests/test_browser.py's server `enterprise`; .ci/run installs it): the turn in
 * gateway_turn.ts. The server's config has the relay fix of docs/gateway_relay_config.py, as
 * docs/deploying.md tells an operator to add: without it the kernel's first connection hangs
 * (docs/gateway-relay.md).
 */
import { gatewayTurn } from './gateway_turn';
import { test } from './galata';
import { NO_OWN_SERVER, ownServer } from './own_server';

const server = ownServer('enterprise');
test.use({ baseURL: server });
test.skip(!server, NO_OWN_SERVER);

gatewayTurn('an Enterprise Gateway');
