// A small recursive-descent evaluator for the calculator tool: numbers, + - * / % ^, unary minus and
// parentheses. No identifiers, so nothing in the expression can reach the runtime.
import { ToolInputError } from './errors.ts';

export function evaluate(expression: string): number {
  if (expression.length > 1000) throw new ToolInputError('The expression is longer than 1000 characters.');
  const tokens = expression.match(/\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\.\d+|[-+*/%^()]|\S/g) ?? [];
  let position = 0;
  const peek = () => tokens[position];
  const take = () => tokens[position++];

  const primary = (): number => {
    const token = take();
    if (token === undefined) throw new ToolInputError('The expression ends too early.');
    if (token === '(') {
      const value = sum();
      if (take() !== ')') throw new ToolInputError('A parenthesis is not closed.');
      return value;
    }
    if (token === '-') return -power();
    if (token === '+') return power();
    const value = Number(token);
    if (Number.isNaN(value)) throw new ToolInputError(`"${token}" is not a number or an operator.`);
    return value;
  };
  const power = (): number => {
    const base = primary();
    // Right-associative: 2 ^ 3 ^ 2 is 2 ^ 9.
    if (peek() === '^') {
      take();
      return base ** power();
    }
    return base;
  };
  const product = (): number => {
    let value = power();
    while (peek() === '*' || peek() === '/' || peek() === '%') {
      const operator = take();
      const right = power();
      if ((operator === '/' || operator === '%') && right === 0) throw new ToolInputError('Division by zero.');
      value = operator === '*' ? value * right : operator === '/' ? value / right : value % right;
    }
    return value;
  };
  const sum = (): number => {
    let value = product();
    while (peek() === '+' || peek() === '-') {
      value = take() === '+' ? value + product() : value - product();
    }
    return value;
  };

  if (tokens.length === 0) throw new ToolInputError('The expression is empty.');
  const result = sum();
  if (position < tokens.length) throw new ToolInputError(`Unexpected "${tokens[position]}".`);
  if (!Number.isFinite(result)) throw new ToolInputError('The result is not a finite number.');
  return result;
}
