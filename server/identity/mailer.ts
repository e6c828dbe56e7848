import nodemailer from 'nodemailer';
import type { Logger } from 'pino';

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

export function createMailer(options: { smtpUrl: string | undefined; from: string; logger: Logger }): Mailer {
  if (!options.smtpUrl) {
    return {
      transport: 'log',
      async send(mail) {
        options.logger.warn({ to: mail.to, subject: mail.subject, text: mail.text }, 'SMTP_URL is not set; mail written to the log');
      },
      close() {},
    };
  }
  const transporter = nodemailer.createTransport(options.smtpUrl);
  return {
    transport: 'smtp',
    async send(mail) {
      await transporter.sendMail({ from: options.from, ...mail });
    },
    close() {
      transporter.close();
    },
  };
}
