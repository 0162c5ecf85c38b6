/**
 * The stack's secrets in Secrets Manager: Temporal's credentials (an API key, an mTLS pair, or none), the
 * LLM providers' keys and the API's JWT secret. Their values are set after deploy (docs/DEPLOY.md); none
 * is in the template or the image.
 *
 * ```ts
 * const secrets = new StarrySecrets(stack, 'SecretsPart', { temporalAuth: 'api-key' });
 * task.addContainer('worker', { secrets: secrets.workflowWorkerSecrets(), … });
 * new NodejsFunction(stack, 'Api', { environment: { ...secrets.temporalSecretArns } });
 * ```
 */
import { Secret as EcsSecret } from 'aws-cdk-lib/aws-ecs';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import type { WorkerEnvName } from '../workers/env';
import { StackPart } from './stack-part';

export interface StarrySecretsProps {
  /** How the workers and the API authenticate to Temporal: an API key, an mTLS pair, or nothing (a private cluster). */
  temporalAuth: 'api-key' | 'mtls' | 'none';
}

/** The secrets; each reader is granted the ones it needs. */
export class StarrySecrets extends StackPart {
  readonly temporalApiKey?: Secret;
  readonly temporalTlsCert?: Secret;
  readonly temporalTlsKey?: Secret;
  readonly openaiApiKey: Secret;
  readonly geminiApiKey: Secret;
  /** The HS256 secret the HTTP API checks bearer tokens with. */
  readonly jwtSecret: Secret;
  /** Temporal's credentials, whichever `temporalAuth` has: what every Lambda reaching Temporal reads. */
  readonly temporal: Secret[];
  /** The Lambdas get the Temporal credentials as ARNs (client/secret-env.ts reads them). */
  readonly temporalSecretArns: Record<string, string>;

  constructor(scope: Construct, id: string, props: StarrySecretsProps) {
    super(scope, id);
    const secret = (sid: string, description: string) => new Secret(this.stack, sid, { description });
    if (props.temporalAuth === 'api-key')
      this.temporalApiKey = secret('TemporalApiKey', 'Temporal Cloud API key (set its value after deploy)');
    if (props.temporalAuth === 'mtls') {
      this.temporalTlsCert = secret('TemporalTlsCert', 'Temporal mTLS client certificate, PEM');
      this.temporalTlsKey = secret('TemporalTlsKey', 'Temporal mTLS client key, PEM');
    }
    this.openaiApiKey = secret('OpenAiApiKey', 'OPENAI_API_KEY for openai: agents (set its value after deploy)');
    this.geminiApiKey = secret(
      'GeminiApiKey',
      'GEMINI_API_KEY for gemini: agents, when not using Vertex AI with the task role',
    );
    this.jwtSecret = new Secret(this.stack, 'ApiJwtSecret', {
      description: 'HS256 secret the HTTP API checks bearer tokens with',
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
    });
    this.temporal = [this.temporalApiKey, this.temporalTlsCert, this.temporalTlsKey].filter((x) => x !== undefined);
    this.temporalSecretArns = {
      ...(this.temporalApiKey ? { TEMPORAL_API_KEY_SECRET_ARN: this.temporalApiKey.secretArn } : {}),
      ...(this.temporalTlsCert && this.temporalTlsKey
        ? {
            TEMPORAL_TLS_CERT_SECRET_ARN: this.temporalTlsCert.secretArn,
            TEMPORAL_TLS_KEY_SECRET_ARN: this.temporalTlsKey.secretArn,
          }
        : {}),
    };
    for (const s of [...this.temporal, this.openaiApiKey, this.geminiApiKey, this.jwtSecret])
      NagSuppressions.addResourceSuppressions(s, [
        {
          id: 'AwsSolutions-SMG4',
          reason:
            'Third-party credentials (Temporal, LLM providers) are rotated at their issuer; the JWT secret is rotated by redeploying.',
        },
      ]);
  }

  /**
   * Temporal's credentials as a worker container's ECS secrets: all a tool worker gets. Typed by the
   * worker's own list of variables (workers/env.ts): the stack cannot set one it ignores.
   */
  toolWorkerSecrets(): Partial<Record<WorkerEnvName, EcsSecret>> {
    return {
      ...(this.temporalApiKey ? { TEMPORAL_API_KEY: EcsSecret.fromSecretsManager(this.temporalApiKey) } : {}),
      ...(this.temporalTlsCert && this.temporalTlsKey
        ? {
            TEMPORAL_TLS_CERT: EcsSecret.fromSecretsManager(this.temporalTlsCert),
            TEMPORAL_TLS_KEY: EcsSecret.fromSecretsManager(this.temporalTlsKey),
          }
        : {}),
    };
  }

  /** The workflow workers' ECS secrets: the LLM keys too (a tool worker refuses to start with one). */
  workflowWorkerSecrets(): Partial<Record<WorkerEnvName, EcsSecret>> {
    return {
      OPENAI_API_KEY: EcsSecret.fromSecretsManager(this.openaiApiKey),
      GEMINI_API_KEY: EcsSecret.fromSecretsManager(this.geminiApiKey),
      ...this.toolWorkerSecrets(),
    };
  }
}
