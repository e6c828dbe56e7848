import type { Transporter } from 'nodemailer';
import type { Logger } from 'pino';
import { ApiError } from '../errors.ts';

export interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface Mailer {
  /** `smtp` sends; `log` writes the message to the server log (development without SMTP_URL). */
  readonly transport: 'smtp' | 'log';
  send(mail: Mail): Promise<void>;
  close(): void;
}

export interface MailerOptions {
  smtpUrl: string | undefined;
  from: string;
  logger: Logger;
  /** Deadline of each SMTP step: connecting, the server's greeting, and every answer after. */
  timeoutMs?: number;
}

/**
 * Sends mail through SMTP_URL, or writes it to the log without one. A mail server that refuses, fails or
 * stays silent past the deadline is a 503 for the caller, with the reason in the log. nodemailer (39
 * modules) is loaded with the first mail, not at start-up: most servers send none for a long while.
 */
export function createMailer(options: MailerOptions): Mailer {
  if (!options.smtpUrl) {
    return {
      transport: 'log',
      async send(mail) {
        options.logger.warn({ to: mail.to, subject: mail.subject, text: mail.text }, 'SMTP_URL is not set; mail written to the log');
      },
      close() {},
    };
  }
  const timeout = options.timeoutMs ?? 10_000;
  const smtpUrl = options.smtpUrl;
  let transporter: Promise<Transporter> | undefined;
  const transport = () =>
    (transporter ??= import('nodemailer').then(({ default: nodemailer }) =>
      nodemailer.createTransport({
        url: smtpUrl,
        connectionTimeout: timeout,
        greetingTimeout: timeout,
        socketTimeout: timeout,
      }),
    ));
  return {
    transport: 'smtp',
    async send(mail) {
      try {
        await (await transport()).sendMail({ from: options.from, ...mail });
      } catch (error) {
        options.logger.error({ err: error, subject: mail.subject }, 'sending mail failed');
        throw new ApiError('service_unavailable', 'The mail could not be sent; try again later.', { cause: error });
      }
    },
    close() {
      void transporter?.then((made) => made.close());
    },
  };
}
