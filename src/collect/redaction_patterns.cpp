#include "collect/redaction_patterns.h"

namespace trainwatch::collect {
namespace {

// Substrings of secret names. Two have harmless look-alikes, skipped where they occur (see
// Redactor::IsSecretName): TOKEN in TOKENIZ (TOKENIZERS_PARALLELISM=false is set in most
// Hugging Face jobs and says how the job ran) and AUTH in AUTHOR (GIT_AUTHOR_NAME), except
// AUTHORIZ (HTTP_AUTHORIZATION holds a credential). PWD is deliberately absent: it is the
// working directory. WEBHOOK, DSN and connection strings are whole credentials in one value
// (SLACK_WEBHOOK_URL, SENTRY_DSN, AZURE_STORAGE_CONNECTION_STRING).
constexpr std::string_view kSecretParts[] = {"TOKEN",
                                             "SECRET",
                                             "PASSWORD",
                                             "PASSWD",
                                             "PASSPHRASE",
                                             "API_KEY",
                                             "APIKEY",
                                             "ACCESS_KEY",
                                             "CREDENTIAL",
                                             "AUTH",
                                             "PRIVATE_KEY",
                                             "WEBHOOK",
                                             "DSN",
                                             "CONNECTION_STRING",
                                             "CONNECTIONSTRING",
                                             "CONN_STR",
                                             "COOKIE",
                                             "SSHPASS"};

// DB_PASS, OPENAI_KEY, SIGNING_KEY, MYSQL_PWD, DB_PWD; a harmless *_KEY (GPG_KEY, a public
// fingerprint in Python images) is over-redacted, which only hides a value nobody debugging a
// training job needs. (OLDPWD and PWD have no underscore before PWD: they stay.)
constexpr std::string_view kSecretSuffixes[] = {"_PASS", "_KEY", "_PWD"};

// Negated classes spell out \x0b because RE2's \s lacks the vertical tab that Hyperscan's
// (PCRE's) \s has, and \v means different things in the two. Later patterns do not match
// [REDACTED] ('[' is outside their classes, or excluded as a value's first character), so a
// value is replaced and counted once: a token used as a URL password
// (https://x-access-token:ghs_...@github.com) counts as github_token, a JWT after Bearer as jwt,
// `--api-key sk-...` as openai_key. Values stop at a backslash so a JSON-escaped quote after a
// value is never eaten.
constexpr BuiltinPattern kBuiltins[] = {
    // A key block: the body between the BEGIN and END lines becomes [REDACTED], keeping the
    // lines (and the newlines, real or JSON-escaped "\n", around the body). The body may hold
    // only what PEM bodies hold, so log lines between a truncated key and a later key's END
    // (with their '[', '(', '_', quotes) are not taken for a body. A block cut short (a truncated
    // log, no END) loses its base64 lines.
    {"private_key",
     // BEGIN line, an optional line break, then the body up to the END line (group 1), or
     // base64 lines (group 2) when no END follows.
     R"re(-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:\r?\n|\\n)?)re"
     R"re((?:((?:[A-Za-z0-9+/=\s:,.-]|\\[nr])*?))re"
     R"re((?:\r?\n|\\n)?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)re"
     R"re(|([A-Za-z0-9+/=]{16,}(?:(?:\s|\\[nr])+[A-Za-z0-9+/=]{16,})*)))re",
     R"re(-----BEGIN [A-Z0-9 ]*PRIVATE KEY)re"},
    // The same block with its BEGIN line cut off (a log tail or an incident's context lines
    // that start inside the key): the whole base64 lines right before the END line (a JSON
    // string's body starts after its quote).
    {"private_key",
     R"re((?:^|\n|\\n|["'])((?:[A-Za-z0-9+/=]{16,}(?:\r?\n|\\r\\n|\\n))*[A-Za-z0-9+/=]+))re"
     R"re((?:\r?\n|\\r\\n|\\n)-----END [A-Z0-9 ]*PRIVATE KEY)re",
     R"re(-----END [A-Z0-9 ]*PRIVATE KEY)re"},
    // A bare secret access key: 40 base64 characters on the line of an access key id, either
    // side of it (`AKIA... wJalr...`, `key=AKIA..., secret=wJalr...`). Before aws_access_key,
    // which takes the id away.
    {"aws_secret",
     R"re(\b(?:AKIA|ASIA)[0-9A-Z]{16}\b[^\n]{0,200}?[^A-Za-z0-9/+]([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$))re"
     R"re(|(?:^|[^A-Za-z0-9/+])([A-Za-z0-9/+]{40})[^A-Za-z0-9/+=\n][^\n]{0,200}?\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)re",
     R"re((?:AKIA|ASIA)[0-9A-Z]{16})re"},
    {"aws_access_key", R"re(\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)re", ""},
    // aws_secret_access_key=..., AWS_SECRET_ACCESS_KEY: ..., "SecretAccessKey": "..." (what
    // `aws sts` prints), --aws-secret-access-key ...: the 40 characters after the name.
    {"aws_secret",
     R"re((?i)secret[_-]?access[_-]?key["']?(?:[ \t]*[:=][ \t]*|[ \t]+)["']?([A-Za-z0-9/+]{40}))re",
     ""},
    {"hf_token", R"re(\bhf_[A-Za-z0-9]{30,}\b)re", ""},
    // GitLab's personal, deploy, runner, trigger and OAuth tokens; Google's API keys; PyPI's
    // upload tokens (a macaroon); NVIDIA's NGC and build.nvidia.com keys.
    {"gitlab_token", R"re(\bgl(?:pat|dt|rt|ptt|soat|cbt)-[A-Za-z0-9_-]{20,})re", ""},
    {"google_api_key", R"re(\b(AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$))re", "AIza"},
    {"pypi_token", R"re(\bpypi-[A-Za-z0-9_-]{50,})re", ""},
    {"nvidia_key", R"re(\bnvapi-[A-Za-z0-9_-]{30,})re", ""},
    {"github_token", R"re(\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b)re", ""},
    // OpenAI's project, service-account and admin keys (sk-proj-...), the older 48-character
    // sk-..., Anthropic's sk-ant-..., OpenRouter's sk-or-v1-.... Not any "sk-" word: the
    // prefixes are spelled out, and a bare sk- needs 32 letters and digits.
    {"openai_key",
     R"re(\bsk-(?:(?:proj|svcacct|admin|ant-api\d\d|ant|or-v1)-[A-Za-z0-9_-]{20,})re"
     R"re(|[A-Za-z0-9]{32,}))re",
     ""},
    // Prefiltered by "xox" alone: one literal instead of seven keeps Hyperscan on its fast
    // literal matcher (the whole table sits near the limit where it leaves it).
    {"slack_token", R"re(\bxox[abposre]-[A-Za-z0-9-]{10,})re", "xox"},
    {"jwt", R"re(\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})re", ""},
    // W&B keys are 40 hex digits, like git commit hashes, so they need a W&B context:
    // `wandb login [flags] KEY` on one line, or KEY after a key/password word at most 300
    // characters after "wandb": WANDB_API_KEY=KEY, wandb.login(key="KEY"), a settings file's
    // `api_key = KEY`, netrc's `machine api.wandb.ai login user password KEY`.
    {"wandb_key", R"re((?i)\bwandb[ \t]+login\b[^\n]*?[ \t=]([0-9a-f]{40})\b)re", ""},
    {"wandb_key",
     R"re((?i)wandb(?s:.{0,300}?)(?:api_?key|\bkey|password))re"
     R"re(["']?(?:[ \t]*[:=][ \t]*|[ \t]+)["']?([0-9a-f]{40})\b)re",
     // Without "wandb": the bounded gap costs Hyperscan half its speed on logs of W&B runs,
     // while a key word right before 40 hex digits is rare enough on its own.
     R"re((?i)(?:key|password)["']?(?:[ \t]*[:=][ \t]*|[ \t]+)["']?[0-9a-f]{40})re"},
    // "Bearer" stays. Tokens shorter than 8 characters are left alone so that prose ("a
    // bearer token", "Bearer auth failed") is not redacted; real tokens are far longer.
    {"bearer", R"re((?i)\bbearer[ \t]+([A-Za-z0-9._~+/-]{8,}=*))re", ""},
    // Authorization: Basic/Digest/Token ... (an HTTP header, a curl -H): the scheme stays.
    {"authorization",
     R"re((?i)\bauthorization["']?[ \t]*[:=][ \t]*["']?(?:basic|digest|token)[ \t]+)re"
     R"re(([A-Za-z0-9+/._~-]{8,}=*))re",
     R"re((?i)authorization)re"},
    // Incoming-webhook URLs are credentials in their path: the host stays, the path goes.
    {"webhook_url",
     R"re((?i)\b(?:hooks\.slack\.com/(?:services|workflows|triggers))re"
     R"re(|discord(?:app)?\.com/api/webhooks|webhook\.office\.com/webhookb2)/([A-Za-z0-9_@/-]{8,}))re",
     ""},
    // Azure connection strings and SAS URLs.
    {"azure_key",
     R"re((?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)[ \t]*=[ \t]*)re"
     R"re(([A-Za-z0-9+/%]{16,}={0,2}))re",
     ""},
    {"azure_key", R"re([?&]sig=([A-Za-z0-9%+/=]{16,}))re", ""},
    // A credential in a URL's query: ?access_token=..., &api_key=..., &password=....
    {"query_secret",
     R"re([?&](?i:(?:access|refresh|id|auth)_?token|token|api_?key|apikey|key|password|passwd)re"
     R"re(|secret|client_secret)=([^&\s"'\\#\[][^&\s"'\\#]*))re",
     R"re([?&](?i:(?:access|refresh|id|auth)_?token|token|api_?key|apikey|key|password|passwd)re"
     R"re(|secret|client_secret)=)re"},
    // scheme://user:password@host: only the password goes. The user may be empty
    // (redis://:pw@host); the password runs to the last '@' before the path, so one with an
    // unencoded '@' is not half left.
    {"url_password", R"re(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\x0b/?#@:]*:([^\s\x0b/?#"'<>\[\]]+)@)re",
     R"re(://[^\s\x0b/?#@:]*:[^\s\x0b/?#"'<>\[\]]+@)re"},
    // scheme://TOKEN@host: a user name of 20 or more token characters is a credential (a
    // Sentry DSN's key, https://TOKEN@github.com); git@, user@ stay.
    {"url_password", R"re(\b[A-Za-z][A-Za-z0-9+.-]*://([A-Za-z0-9_~%-]{20,})@)re", ""},
    // Command-line options carrying a secret: --password=..., --password ..., --api-key ...,
    // --hub-token ..., -secret ...: the option's last word names the secret (--password-file,
    // --max-tokens, --secret-name do not). A quoted value goes whole. Lower case, as options
    // are. Three patterns for one kind, each prefiltered by the option's last word and what
    // follows it: the form derived from the regex (the option's leading words), a
    // case-insensitive one, or one form for all the words costs Hyperscan two thirds of its
    // speed on every text; "token" is in every other line of a training log (tokens/s).
    {"secret_option",
     R"re((?:^|[\s"'])--?(?:[a-z0-9]+[-_])*(?:password|passwd|passphrase|secret|secret[-_]?key))re"
     R"re((?:=|[ \t]+))re"
     R"re((?:'([^'\n\[][^'\n]*)'|"([^"\n\[][^"\n]*)"|([^\s"'\\\[][^\s"'\\]*)))re",
     R"re((?:passw(?:or)?d|passphrase|secret))re"},
    {"secret_option",
     R"re((?:^|[\s"'])--?(?:[a-z0-9]+[-_])*(?:api[-_]?key|apikey|access[-_]?key|private[-_]?key)re"
     R"re(|credentials?|auth|key)(?:=|[ \t]+))re"
     R"re((?:'([^'\n\[][^'\n]*)'|"([^"\n\[][^"\n]*)"|([^\s"'\\\[][^\s"'\\]*)))re",
     R"re((?:api[-_]?key|apikey|access[-_]?key|private[-_]?key|credential|-auth[= \t])re"
     R"re(|[-_]key[= \t]))re"},
    // mysql -pPASSWORD (and its tools): the password glued to -p.
    {"secret_option",
     R"re(\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n]*?[ \t]-p)re"
     R"re(([^\s"'\\\[-][^\s"'\\]*))re",
     R"re((?:mysql|mariadb)[^\n]*[ \t]-p[^\s])re"},
    {"secret_option",
     R"re((?:^|[\s"'])--?(?:[a-z0-9]+[-_])*token(?:=|[ \t]+))re"
     R"re((?:'([^'\n\[][^'\n]*)'|"([^"\n\[][^"\n]*)"|([^\s"'\\\[][^\s"'\\]*)))re",
     R"re([-_]token[= \t])re"},
    // api_key = ..., "client_secret": "...", SECRET_KEY=...: a name that says what the value
    // is, in code, config or JSON. Not a "$VARIABLE" or "${...}" (a shell's reference), not a
    // "-----BEGIN" (a key block, private_key's).
    {"key_field",
     R"re((?i)\b[A-Za-z0-9_]*(?:api_?key|secret_?key|access_?key|client_secret))re"
     R"re(["']?[ \t]*[=:][ \t]*["']?([^\s"'\\\[;&,$-][^\s"'\\;&,]*))re",
     R"re((?i)(?:api_?key|secret_?key|access_?key|client_secret)["']?[ \t]*[=:])re"},
    // A JSON member whose name ends in token, secret or auth: "auth_token": "...".
    {"key_field",
     R"re((?i)"[A-Za-z0-9_-]*(?:token|secret|auth)"[ \t]*:[ \t]*"([^"\\\[][^"\\]*)")re",
     R"re((?i)(?:token|secret|auth)"[ \t]*:)re"},
    // password=..., DB_PASSWORD: ..., "password": "...", Password=...; in a connection string.
    {"password_field",
     R"re((?i)\b[A-Za-z0-9_]*pass(?:word|wd)["']?[ \t]*[=:][ \t]*["']?)re"
     R"re(([^\s"'\\\[;&,][^\s"'\\;&,]*))re",
     ""},
};

}  // namespace

std::span<const BuiltinPattern> BuiltinPatterns() { return kBuiltins; }
std::span<const std::string_view> SecretNameParts() { return kSecretParts; }
std::span<const std::string_view> SecretNameSuffixes() { return kSecretSuffixes; }

}  // namespace trainwatch::collect
