// A real OpenID Provider for pixgw's single sign-on tests: the certified `oidc-provider`
// package, over https, with one fixed client, a few fixed people, a plain login form (with a
// "Cancel" that denies consent) and consent given automatically.
//
// Settings (environment):
//   OIDC_PORT           port on 127.0.0.1 (0: any free one)
//   OIDC_TLS_CERT/_KEY  PEM files of the server certificate
//   OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_REDIRECT_URI   the one client (pixgw)
//
// Prints `oidc-provider listening on <issuer>` once it serves.
//
// Control (for tests): POST /__control/clock?offset=<seconds> shifts the provider's clock for
// the token endpoint only (the ID token's iat and exp), so a test can receive a token that
// expired or one issued in the future while the browser's cookies stay valid.

import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { randomBytes } from 'node:crypto';
import Provider from 'oidc-provider';

const env = (name) => {
  const value = process.env[name];
  if (value === undefined || value === '') {
    console.error(`${name} must be set`);
    process.exit(2);
  }
  return value;
};

// The people who can sign in (password for all: "secret").
const PEOPLE = {
  'ana@acme.test': { name: 'Ana Lima', groups: ['staff'] },
  'fabio@acme.test': { name: 'Fábio Costa', groups: ['staff', 'finance'] },
  'owner@acme.test': { name: 'Olga Dona', groups: ['owners'] },
  'eve@elsewhere.test': { name: 'Eve Fora', groups: ['finance'] },
  'zoe@acme.test': { name: 'Zoe Reis', groups: [] },
};
const PASSWORD = 'secret';

let clockOffsetSeconds = 0;

const port = Number(process.env.OIDC_PORT ?? '0');
const tls = { cert: readFileSync(env('OIDC_TLS_CERT')), key: readFileSync(env('OIDC_TLS_KEY')) };
const server = createServer(tls);
await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
const issuer = `https://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: env('OIDC_CLIENT_ID'),
      client_secret: env('OIDC_CLIENT_SECRET'),
      redirect_uris: [env('OIDC_REDIRECT_URI')],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'groups'],
  },
  // ID token claims go in the ID token itself (not only the userinfo endpoint).
  conformIdTokenClaims: false,
  findAccount: async (_ctx, id) => {
    const person = PEOPLE[id];
    if (!person) return undefined;
    return {
      accountId: id,
      claims: async () => ({
        sub: id,
        email: id,
        email_verified: true,
        name: person.name,
        groups: person.groups,
      }),
    };
  },
  pkce: { required: () => true },
  features: { devInteractions: { enabled: false } },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  cookies: { keys: [randomBytes(32).toString('hex')] },
  ttl: { IdToken: 600, AccessToken: 600, AuthorizationCode: 600, Interaction: 600, Session: 3600, Grant: 3600 },
  renderError: async (ctx, out) => {
    ctx.type = 'html';
    ctx.body = `<!doctype html><title>Error</title><h1>oidc-provider error</h1><pre id="error">${escape(JSON.stringify(out))}</pre>`;
  },
});

function escape(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(res, status, html) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
  res.end(`<!doctype html><html><head><meta charset="utf-8"><title>ACME sign-in</title></head><body>${html}</body></html>`);
}

function loginForm(uid, error) {
  return `<h1>ACME identity</h1>
${error ? `<p id="login-error">${escape(error)}</p>` : ''}
<form method="post" action="/interaction/${uid}/login">
  <label for="login">E-mail</label> <input id="login" name="login" type="email" autofocus>
  <label for="password">Password</label> <input id="password" name="password" type="password">
  <button type="submit" id="login-submit">Sign in</button>
</form>
<form method="post" action="/interaction/${uid}/abort">
  <button type="submit" id="login-cancel">Cancel</button>
</form>`;
}

async function body(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

// Consent for everything asked, given without a question.
async function consent(details) {
  const { prompt, params, session, grantId } = details;
  const grant = grantId
    ? await provider.Grant.find(grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
  if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
  if (prompt.details.missingResourceScopes) {
    for (const [indicator, scopes] of Object.entries(prompt.details.missingResourceScopes)) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
  }
  return { consent: { grantId: await grant.save() } };
}

async function interaction(req, res, path) {
  const [, , uid, action] = path.split('/');
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) return page(res, 400, '<p>interaction mismatch</p>');
  if (req.method === 'GET') {
    if (details.prompt.name === 'login') return page(res, 200, loginForm(uid));
    return provider.interactionFinished(req, res, await consent(details), { mergeWithLastSubmission: true });
  }
  if (action === 'abort') {
    return provider.interactionFinished(
      req,
      res,
      { error: 'access_denied', error_description: 'End-User aborted interaction' },
      { mergeWithLastSubmission: false },
    );
  }
  if (action === 'login') {
    const form = await body(req);
    const login = (form.get('login') ?? '').toLowerCase();
    if (!PEOPLE[login] || form.get('password') !== PASSWORD) {
      return page(res, 200, loginForm(uid, 'Wrong e-mail or password'));
    }
    return provider.interactionFinished(req, res, { login: { accountId: login } }, { mergeWithLastSubmission: false });
  }
  return page(res, 404, '<p>no such interaction step</p>');
}

const handle = provider.callback();
server.on('request', async (req, res) => {
  const url = new URL(req.url, issuer);
  try {
    if (url.pathname === '/__control/clock' && req.method === 'POST') {
      clockOffsetSeconds = Number(url.searchParams.get('offset') ?? '0');
      res.writeHead(204);
      return res.end();
    }
    if (url.pathname.startsWith('/interaction/')) return await interaction(req, res, url.pathname);
    if (url.pathname === '/token' && clockOffsetSeconds !== 0) {
      // The token endpoint alone sees the shifted clock; restored when its answer is sent.
      const realNow = Date.now;
      Date.now = () => realNow() + clockOffsetSeconds * 1000;
      res.on('finish', () => {
        Date.now = realNow;
      });
    }
    return handle(req, res);
  } catch (err) {
    console.error(err);
    if (!res.headersSent) page(res, 500, `<pre>${escape(err.stack ?? err)}</pre>`);
  }
});

console.log(`oidc-provider listening on ${issuer}`);
