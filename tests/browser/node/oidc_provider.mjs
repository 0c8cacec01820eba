// A real OpenID provider for the browser tests: oidc-provider (the certified Node.js
// implementation), with its development sign-in pages (any login name, no password check).
//
// node oidc_provider.mjs CONFIG.json
// CONFIG: {port, clientId, clientSecret, redirectUris: [...], postLogoutRedirectUris: [...],
//          keys: [JWK, ...] (private; the first one signs), accounts: {login: {claims}}}
// Prints "listening <issuer>" once it answers.
import { readFileSync } from "node:fs";
import Provider from "oidc-provider";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const issuer = `http://127.0.0.1:${config.port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: config.clientId,
      client_secret: config.clientSecret,
      redirect_uris: config.redirectUris,
      post_logout_redirect_uris: config.postLogoutRedirectUris,
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic",
    },
  ],
  jwks: { keys: config.keys },
  pkce: { required: () => true, methods: ["S256"] },
  claims: {
    openid: ["sub"],
    profile: ["name", "preferred_username", "groups", "team", "backfiller_jobs"],
    email: ["email"],
  },
  features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
  ttl: { IdToken: 3600, AccessToken: 3600, Session: 3600, Grant: 3600, Interaction: 600 },
  async findAccount(ctx, id) {
    const known = config.accounts[id];
    if (!known) return undefined;
    return { accountId: id, claims: async () => ({ sub: id, ...known }) };
  },
  async loadExistingGrant(ctx) {
    // Consent is given once and for all: the tests sign in, they do not consent.
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope("openid profile email");
    await grant.save();
    return grant;
  },
});
provider.proxy = false;

const server = provider.listen(config.port, "127.0.0.1", () => {
  console.log(`listening ${issuer}`);
});
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => server.close(() => process.exit(0)));
